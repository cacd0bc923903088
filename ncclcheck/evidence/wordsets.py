"""Which of several word lists a line holds, found in one pass over the line.

The assembler (evidence/parse.py) tests each line it is handed for the sources' words before any pattern: which
launchers' and frameworks' readers to feed (their ``words`` and ``head_words``), then the busy, signal, clue, fact
and error words of the sources it reads itself. As ``any(map(text.__contains__, words))`` that is one substring
search per word, ~130 of them on a line that holds none (NCCL's INFO chatter in a job's head): a third of the
assembler's time on the chatty benchmark corpus. Hyperscan finds every list a line holds in one pass (~1 us a line,
10-20 times less); where it is not installed, or ``NCCLCHECK_ENGINE`` names another engine of the reader, the
substring searches are kept (tests hold the two to the same answer).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
from collections.abc import Sequence
from typing import Any

from ncclcheck import cachedir


def _hyperscan() -> Any:
    """Hyperscan's module as ``Any`` (see evidence/reader.py's ``_optional``), None where it is missing or another
    engine is asked for."""
    if os.environ.get("NCCLCHECK_ENGINE", "hyperscan") != "hyperscan":
        return None
    try:
        return importlib.import_module("hyperscan")
    except ImportError:  # pragma: no cover - a platform without its wheel
        return None


class WordSets:
    """Word lists, numbered in order: :meth:`mask` is the set of those a text holds a word of, bit ``i`` for list
    ``i``."""

    def __init__(self, lists: Sequence[Sequence[str]]) -> None:
        self.lists = tuple(tuple(words) for words in lists)
        self._db = self._compile()

    def _compile(self) -> Any:
        """One literal expression a word, its id the number of its list; each reported once a scan
        (``HS_FLAG_SINGLEMATCH``). None where Hyperscan cannot be used."""
        hs = _hyperscan()
        if hs is None:
            return None
        pairs = [(word, i) for i, words in enumerate(self.lists) for word in dict.fromkeys(words)]
        path = _kept_at(hs, pairs)
        if path is not None and (loaded := _load(hs, path)) is not None:
            return loaded
        database = hs.Database(mode=hs.HS_MODE_BLOCK)
        try:
            database.compile(expressions=[b"".join(b"\\x%02x" % c for c in w.encode()) for w, _ in pairs],
                             ids=[i for _, i in pairs], elements=len(pairs),
                             flags=[hs.HS_FLAG_SINGLEMATCH] * len(pairs))
        except hs.error:  # pragma: no cover - a processor Hyperscan does not support
            return None
        if path is not None:
            _store(hs, path, database)
        return database

    def mask(self, text: str) -> int:
        """Bit ``i`` set where ``text`` holds a word of list ``i``."""
        if self._db is None:
            return sum(1 << i for i, words in enumerate(self.lists) if any(map(text.__contains__, words)))
        found = [0]

        def hit(i: int, _start: int, _end: int, _flags: int, _ctx: object) -> None:
            found[0] |= 1 << i

        self._db.scan(text.encode(), match_event_handler=hit)
        return found[0]


def _kept_at(hs: Any, pairs: list[tuple[str, int]]) -> str | None:
    """Where the database of these words is kept (compiling it took ~10 ms of every start, before the workers are
    forked, as the reader's own did: evidence/reader.py), or None where caching is off."""
    folder = cachedir.directory()
    if folder is None:
        return None
    digest = hashlib.sha256(repr((hs.__version__, pairs)).encode()).hexdigest()[:24]
    return os.path.join(folder, f"wordsets-{digest}.hs")


def _load(hs: Any, path: str) -> Any:
    """The database kept at ``path``; None where there is none or it cannot be used (Hyperscan checks that it was
    compiled for this processor), and then it is compiled again."""
    try:
        with open(path, "rb") as fh:
            database = hs.loadb(fh.read(_MAX_KEPT), hs.HS_MODE_BLOCK)
        database.scratch = hs.Scratch(database)
    except (OSError, hs.error):
        return None
    return database


def _store(hs: Any, path: str, database: Any) -> None:
    """Keep the database for the next process, written whole or not at all (workers and runs race to it)."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".wordsets-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(hs.dumpb(database))
        os.replace(tmp, path)
    except OSError:  # a cache that cannot be written is skipped: the answer is the same without it
        return


_MAX_KEPT = 16 << 20  # bytes: the database takes ~100 kB; a larger file is not ours
