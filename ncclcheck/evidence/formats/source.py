"""The one interface every source of lines implements, and the pieces its modules are made of.

A source of lines is whatever prints lines ncclcheck reads: a launcher (Open MPI, Slurm, DeepSpeed, Ray), a
framework, a collector. Each module under ``evidence/formats/`` exports one object of :class:`LineSource`; the
registry (``formats/__init__.py``) is the list of them, and every word list the block reader and the parser keep is
derived from it. A source says which literal ``words`` gate it (a line holding none is never matched against its
patterns, and the block reader keeps every line holding one wherever it stands), which prefixes and file names name
a rank, which real lines it prints (``samples``: tests/test_formats_registry.py places each deep in a long log and
reads it back), and hands out a fresh :class:`Reader` per input, whose ``feed(text, loc)`` turns one line into
typed events (``evidence/types.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from ncclcheck.evidence.types import JobStop, Loc, Read, Said, WorkerEnd

# Where a sample's events are said to be read: the registry's test compares events with their place set to this.
AT = Loc("sample", 0)


class Reader(Protocol):
    """One input's lines of one source, read in order (a report may span lines: its state lives here)."""

    def feed(self, text: str, loc: Loc) -> Iterable[Read]:
        """The events one line (repaired: ``evidence/repair.clean``) says; nothing for any other line."""
        ...


@dataclass(frozen=True)
class Sample:
    """A real line of a source (``cite``: the recording or public page it is from) and the events a fresh reader
    reads from it, after the lines ``before`` it (a report that spans lines), each at :data:`AT`; nothing, where a
    line before it says so (the state it sets is what the sample shows: a fresh reader would read the line)."""

    line: str
    cite: str
    reads: tuple[Read, ...]
    before: tuple[str, ...] = ()


@dataclass(frozen=True)
class Behind:
    """Patterns a source reads only where something it declares found the text first (``within``, any one of them):
    a pattern it declares (``patterns``, its tags, or another :class:`Behind`'s), whose match, group, line or record
    these read further (a record's fields, a report's next lines); or a word the line is tested for first, which
    holds one of its ``words``, ``head_words`` or triggers' words (so the reader keeps the line; tests/test_keep.py's
    ``UNKEPT`` names the few that do not). tests/test_keep.py checks every pattern a module under ``formats/``
    compiles is declared (here, in ``patterns``, its tags or ``shapes``) and every ``within`` is the source's own."""

    within: tuple[re.Pattern[str] | str, ...]
    patterns: tuple[re.Pattern[str], ...]


@dataclass(frozen=True)
class Trigger:
    """A word the block reader finds in every block by one byte of it that ordinary lines rarely hold (``anchor``):
    the line it stands on is handed over, with its neighbours (a record's wraps, a report's body), where it also names
    one of the sources' ``wanted`` words. ``pattern``: the word is a regular expression starting at its anchor (a
    variable part: ``#\\d``), else it is taken literally (and searched whole where its anchor keeps missing)."""

    word: str
    anchor: str
    pattern: bool = False

    @property
    def back(self) -> int:
        """How many bytes of the word come before its anchor."""
        return 0 if self.pattern else self.word.index(self.anchor)

    @property
    def regex(self) -> bytes:
        """The word as a pattern that matches where it starts."""
        return self.word.encode() if self.pattern else re.escape(self.word).encode()


class LineSource(Protocol):
    """What every source of lines declares (read-only, so that a frozen dataclass is one)."""

    @property
    def name(self) -> str: ...
    @property
    def words(self) -> tuple[str, ...]:
        """Literal words one of which every line it reads on its own holds: kept by the block reader anywhere."""
        ...
    @property
    def head_words(self) -> tuple[str, ...]:
        """Literal words of set-up lines it reads that the block reader hands over in an input's head only (the
        first ``reader.HEAD`` bytes, where they are printed), as they stand on ordinary lines too."""
        ...
    @property
    def patterns(self) -> tuple[re.Pattern[str], ...]:
        """Every pattern read behind ``words``: each alternative of each holds one (tests/test_keep.py)."""
        ...
    @property
    def rank_tags(self) -> tuple[re.Pattern[str], ...]:
        """Prefixes at a line's start that name its global rank (group ``rank``)."""
        ...
    @property
    def rank_marks(self) -> tuple[tuple[str, re.Pattern[str]], ...]:
        """Tags further along a line (behind a logger's prefix) that name its global rank, each with a literal word
        tested first (group ``rank``; searched in the line's first 200 characters)."""
        ...
    @property
    def prefixes(self) -> tuple[re.Pattern[str], ...]:
        """Tags it puts before each line it carries (a rank's, a worker's, an actor's), which evidence/whose.py takes
        off before the line is read (``formats.PREFIXES``: every source's, in the registry's order)."""
        ...
    @property
    def headers(self) -> tuple[re.Pattern[str], ...]:
        """Shapes that begin a record of its (a hard wrap's continuation never looks like one): the assembler joins
        a line to the one before only where no source's header is on it (``formats.HEADER``)."""
        ...
    @property
    def pid_tags(self) -> tuple[re.Pattern[str], ...]:
        """Prefixes at a line's start that name its process (group ``pid``; group ``merged`` set on a line the
        source merged across processes, which is no one process's)."""
        ...
    @property
    def path_ranks(self) -> tuple[re.Pattern[str], ...]:
        """Per-rank output file names (group ``rank``)."""
        ...
    @property
    def behind(self) -> tuple[Behind, ...]:
        """Patterns read only where one of its declared patterns or words found the text first (not gates)."""
        ...
    @property
    def shapes(self) -> tuple[re.Pattern[str], ...]:
        """Patterns tested on any line the assembler reads, gated by no word of a source, that find no line of their
        own: a header to take off (a collector's label, a logger's), where two glued lines meet, whether a line may
        open a record."""
        ...
    @property
    def triggers(self) -> tuple[Trigger, ...]:
        """Words of its lines the block reader finds by an anchor byte (a record's lines that hold no keep word)."""
        ...
    @property
    def wanted(self) -> tuple[str, ...]:
        """Patterns one of which a triggered line of it names, for the block reader to hand it over."""
        ...
    @property
    def samples(self) -> tuple[Sample, ...]: ...
    @property
    def logical(self) -> bool:
        """Whether the assembler (evidence/parse.py) reads the source's lines itself, as logical lines (hard wraps
        joined) with the line's process known, in its own order (a record, an error, a host's record: each read
        after the line's launcher reports and before the next source's); else each physical line holding one of its
        words is fed to its reader first, and what it yields joined to ranks."""
        ...
    def reader(self) -> Reader: ...


@dataclass(frozen=True)
class Format:
    """A source of lines declared as data: the usual way a module under ``formats/`` makes its :class:`LineSource`."""

    name: str
    words: tuple[str, ...]
    make: Callable[[], Reader]
    samples: tuple[Sample, ...]
    patterns: tuple[re.Pattern[str], ...] = ()
    head_words: tuple[str, ...] = ()
    rank_tags: tuple[re.Pattern[str], ...] = ()
    rank_marks: tuple[tuple[str, re.Pattern[str]], ...] = ()
    prefixes: tuple[re.Pattern[str], ...] = ()
    headers: tuple[re.Pattern[str], ...] = ()
    pid_tags: tuple[re.Pattern[str], ...] = ()
    path_ranks: tuple[re.Pattern[str], ...] = ()
    behind: tuple[Behind, ...] = ()
    shapes: tuple[re.Pattern[str], ...] = ()
    triggers: tuple[Trigger, ...] = ()
    wanted: tuple[str, ...] = ()
    logical: bool = False

    def reader(self) -> Reader:
        return self.make()


@dataclass(frozen=True)
class LineFormat:
    """One line a launcher prints about its workers: a cheap literal ``word`` the line must hold, the ``pattern``
    that reads it, and what it means (``read``: the worker that ended), or ``stop``: the launcher stopped the whole
    job (a time limit) and names no worker. ``rankless``: the line reports a worker's end but cannot say which."""

    source: str
    word: str
    pattern: re.Pattern[str]
    read: Callable[[re.Match[str]], WorkerEnd] | None = None
    stop: bool = False
    rankless: bool = False


@dataclass(frozen=True)
class Console:
    """How a launcher's console shows how the job ended (job/ending.py), in words for a report: the launcher's name
    (the value of the ``launched`` fact its reader yields on a line only its console holds: its tag, its label, its
    start line), its lines at a normal end (``done``; the reader yields a ``launcher_done`` fact for each), its lines
    at a failure (read as a worker's end or a job's stop), and what says how a job ended when its console stops with
    neither (``bring``)."""

    name: str
    done: str
    failed: str
    bring: str


def ended(source: str, rank: int | None, *, exitcode: int | None = None, signal: str | None = None,
          pid: int | None = None, host: str | None = None) -> WorkerEnd:
    """A worker's end as a :class:`LineFormat` reads it (its words and place are set by :class:`LauncherLines`)."""
    return WorkerEnd(source, rank, "", AT, exitcode=exitcode, signal=signal, pid=pid, host=host)


class LauncherLines:
    """Reads one input's lines of one launcher's :class:`LineFormat` table, in order. A worker named on one line
    and ended on the next (Open MPI's "Process name: [[j,1],R]" then "Exit code: N") is joined here."""

    def __init__(self, formats: tuple[LineFormat, ...]) -> None:
        self._formats = formats
        self._held: WorkerEnd | None = None

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        """A job-wide stop, or a worker's end (rank None for a rankless report), quoted from the launcher's own words
        on (a label or a progress bar may stand before them); nothing for the first line of a two-line report, whose
        end is read at the line that completes it."""
        for fmt in self._formats:
            if fmt.word not in text or not (m := fmt.pattern.search(text)):
                continue
            quoted = text[m.start():].strip()
            if fmt.stop or fmt.read is None:
                return (JobStop(fmt.source, quoted, loc),)
            end = replace(fmt.read(m), text=quoted, loc=loc)
            if fmt.rankless:
                return (end,)
            if end.rank is not None and end.exitcode is None and end.signal is None:
                self._held = end  # its end is on the next report line
                return ()
            if end.rank is None:
                held, self._held = self._held, None
                return (replace(held, exitcode=end.exitcode, signal=end.signal, loc=loc),) if held else ()
            return (end,)
        return ()


def unnamed(pattern: re.Pattern[str]) -> str:
    """A pattern's text with its named groups unnamed, to join it with others (a name may be defined once)."""
    return re.sub(r"\(\?P<\w+>", "(?:", pattern.pattern)
