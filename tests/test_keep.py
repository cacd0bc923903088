"""What the reader keeps: every line a cause is read from is found wherever it stands in a long log.

The parser reads errors, clues, deaths by signal, launchers' and hosts' records and endings only from lines that
hold one of its cheap words (``formats.KEEP_WORDS``), and the reader searches every block for those same words
(``reader.WHOLE_WORDS``).  These tests hold the three together:

* every alternative of every pattern read behind those words holds one of them (read with ``re``'s own parser,
  so a new alternative without one fails here, not silently deep in someone's log);
* every cause of the catalogue has example lines (its file in ncclcheck/job/catalogue/, each line cited: the
  loader refuses a file without them), and each, with and without a ``[rankN]:`` prefix, is read as that cause at
  the start of a long ordinary rank log and past its head (64 KiB); placed at 1 MiB and where the reader's second
  block begins, each is read as it is at 64 KiB, every engine hands it over there, and at and across a block's end;
* every alternative of every cause matches an example line or a line of some fixture; and the fast and the full
  reading give the same report on every fixture.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import pkgutil
import random
import re
import tempfile
from pathlib import Path

import pytest
from analysed import report
from conftest import CONFORMANCE, DATA, run

from ncclcheck.evidence import formats, hostlog, reader
from ncclcheck.evidence.formats import storeclient
from ncclcheck.evidence.formats.source import AT, LineSource, Sample
from ncclcheck.evidence.repair import clean
from ncclcheck.evidence.types import FileScan, Loc
from ncclcheck.job.causes import CATALOGUE

try:  # the regular-expression parser of the running Python (3.11+ names; sre_parse before)
    from re import _constants as sre  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as sre  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

# Every pattern a registered source reads behind its words (evidence/formats/): none can be left off.
GATED = {f"{source.name}:{i}": pattern for source in formats.FORMATS for i, pattern in enumerate(source.patterns)}
# A source's set-up words (``head_words``) keep its lines in an input's head only: a pattern held by one of them is read
# there (NCCL's connection lines: one a channel and peer, too many to keep anywhere).
HEADS = {f"{source.name}:{i}": source.head_words for source in formats.FORMATS for i in range(len(source.patterns))}
_REPEATS = tuple(getattr(sre, n) for n in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(sre, n))


def _holds_word(items, words: tuple[str, ...]) -> bool:
    """Whether every match of this parsed sequence holds one of ``words`` (read from its literal runs)."""
    run_ = ""
    for op, av in items:
        if op is sre.LITERAL:
            run_ += chr(av)
            continue
        if any(w in run_ for w in words):
            return True
        # sre_parse moves a prefix the alternatives share out before them ("NCCL (?:error…|failure…)"): each
        # alternative is read with it.
        before, run_ = [(sre.LITERAL, ord(c)) for c in run_], ""
        if op is sre.SUBPATTERN and _holds_word([*before, *av[-1]], words):  # the run goes on into the group
            return True
        if op is sre.BRANCH and all(_holds_word([*before, *b], words) for b in av[1]):
            return True
        if op in _REPEATS and av[0] >= 1 and _holds_word(av[2], words):
            return True
        if op is sre.ASSERT and av[0] == 1 and _holds_word(av[1], words):  # a lookahead's text is there too
            return True
    return any(w in run_ for w in words)


def _alternatives(pattern: re.Pattern[str]) -> list[tuple[str, object]]:
    """The top-level alternatives of a pattern, as (text, parsed sequence)."""
    parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    items = list(parsed)
    branches = items[0][1][1] if len(items) == 1 and items[0][0] is sre.BRANCH else [parsed]
    texts = _split(pattern.pattern)
    texts = texts if len(texts) == len(branches) else [pattern.pattern] * len(branches)
    return list(zip(texts, branches, strict=True))


def _split(pattern: str) -> list[str]:
    """A pattern's text cut at its top-level ``|``."""
    out, depth, in_class, escaped, cur = [], 0, False, False, ""
    for ch in pattern:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch in "()":
            depth += 1 if ch == "(" else -1
        elif ch == "|" and depth == 0:
            out.append(cur)
            cur = ""
            continue
        cur += ch
    return [*out, cur]


@pytest.mark.parametrize("name", sorted(GATED))
def test_every_alternative_holds_a_word_the_reader_keeps(name):
    """A line one of these patterns reads is kept by the reader at any offset: each of its alternatives holds a
    word of ``formats.KEEP_WORDS`` (which the reader searches for whole), or in the head, one of its set-up words."""
    lost = [text for text, items in _alternatives(GATED[name])
            if not _holds_word(items, (*formats.KEEP_WORDS, *HEADS[name]))]
    assert not lost, f"{name}: alternatives no KEEP_WORDS word finds: {lost}"


@pytest.mark.parametrize("source", formats.FORMATS, ids=lambda f: f.name)
def test_every_alternative_of_a_sources_patterns_holds_one_of_its_words(source):
    """Each registered source's patterns are read behind its own words only, and the reader keeps those whole (its
    set-up words in the head): every alternative of every pattern it declares holds one of them."""
    lost = [f"{pattern.pattern}: {text}" for pattern in source.patterns for text, items in _alternatives(pattern)
            if not _holds_word(items, (*source.words, *source.head_words))]
    assert not lost, f"{source.name}: alternatives none of its words finds: {lost}"
    assert set(source.words) <= set(formats.KEEP_WORDS)


def test_the_reader_searches_for_every_keep_word():
    """Every word the parser gates on is found by one the reader searches for (itself, or a part of it)."""
    for word in formats.KEEP_WORDS:
        assert any(w.decode() in word for w in reader.WHOLE_WORDS), word


# ---------------------------------------------------------------------------------------------- example lines
def _examples() -> list[tuple[str, str, bool]]:
    """(cause, line, whether the line is read as its cause alone): a line its file gives a ``context`` (a warning,
    the text under NCCL's "Last error:") is the cause only beside the failure it explains."""
    return [(c.kind, e.line, e.context is None) for c in CATALOGUE for e in c.examples]


@functools.cache
def _chatter() -> bytes:
    """About 8.3 MiB of an ordinary rank's log: training progress, tqdm bars, NCCL INFO lines, benign warnings."""
    rnd = random.Random(34)
    shapes = (
        lambda i: f"{{'loss': {rnd.random() * 4:.4f}, 'grad_norm': {rnd.random() * 2:.3f}, 'learning_rate': 2e-05, "
                  f"'epoch': {i / 1000:.2f}}}",
        lambda i: f" {i % 100:2d}%|{'#' * (i % 10):10s}| {i}/90000 [1:02:11<1:25:43,  1.34s/it, loss={rnd.random():.3f}]",
        lambda i: f"node3:4003:4103 [3] NCCL INFO Channel {i % 32:02d}/32 : 3[3] -> 4[4] via P2P/IPC/read",
        lambda i: f"node3:4003:4103 [3] NCCL INFO comm 0x{rnd.getrandbits(40):x} rank 3 nranks 8 cudaDev 3 busId "
                  f"3b000 commId 0x{rnd.getrandbits(60):x} - Init COMPLETE",
        lambda i: "node3:4003:4103 [3] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
        lambda i: f"step {i} | loss {rnd.random() * 4:.4f} | lr 3.0e-05 | tokens/s {rnd.randrange(1000, 90000)}",
        lambda i: f"[W1122 04:{i % 60:02d}:{rnd.randrange(60):02d}.408495730 ProcessGroupNCCL.cpp:4561] Warning: "
                  "something benign happened on this rank",
        lambda i: "/usr/lib/python3/site-packages/torch/utils/checkpoint.py:91: UserWarning: None of the inputs "
                  "have requires_grad=True. Gradients will be None",
    )
    out, size, i = [], 0, 0
    while size < max(OFFSETS) + (256 << 10):
        line = shapes[rnd.randrange(len(shapes))](i).encode() + b"\n"
        out.append(line)
        size += len(line)
        i += 1
    return b"".join(out)


# 0, 64 KiB, 1 MiB: inside the reader's first block and its 16 KiB head or not; the last, where the second block
# begins (the line that starts at a block's boundary is the one a block cut could lose).
OFFSETS = (0, 64 << 10, 1 << 20, reader.BLOCK)
SHALLOW, DEEP = OFFSETS[:2], OFFSETS[2:]


def _placements() -> list[tuple[str, str, bool, str]]:
    """(cause, line as placed, whether it is its cause alone, the log of its kind): every example line, with and
    without a ``[rankN]:`` prefix, in a rank's own log; a host's or a scheduler's record without, in an input that
    names no rank (in a rank's log such a record speaks for the rank only where it joins it by PID, GPU or host)."""
    return [(kind, prefix + line, alone, "console" if host else "prefixed" if prefix else "plain")
            for kind, line, alone in _examples() for host in (hostlog.maybe_host_record(line),)
            for prefix in (("",) if host else ("", "[rank3]: "))]


def _log_name(log: str) -> str:
    return "console.log" if log == "console" else "rank3.log"


def _cut(offset: int) -> int:
    """Where the first line at or after ``offset`` bytes of chatter starts."""
    return _chatter().index(b"\n", offset - 1) + 1 if offset else 0


def _placed(tmp: Path, line: str, log: str, offset: int) -> Path:
    """``line`` in a log after ``offset`` bytes (to the next line start) of chatter, and 64 KiB of chatter after it."""
    chatter, cut = _chatter(), _cut(offset)
    path = tmp / _log_name(log)
    path.write_bytes(chatter[:cut] + (line + "\n").encode() + chatter[cut: cut + (64 << 10)])
    return path


def _cause(path: Path) -> str | None:
    verdict = run(path).verdict
    return verdict.cause.cause.kind if verdict.cause is not None else None


def _read_at(scan: FileScan, line: int) -> list[object]:
    """What the parser read from one line of an input: every event it located there, its place left out."""
    return [dataclasses.replace(event, loc=Loc(Path(event.loc.file).name, 0)) for field in dataclasses.fields(scan)
            if isinstance(found := getattr(scan, field.name), tuple)
            for event in found if getattr(event, "loc", None) is not None and event.loc.line == line]


def _arranged(offset: int, lines: tuple[str, ...]) -> tuple[bytes, list[int]]:
    """``lines`` in one input: the first after ``offset`` bytes of chatter, each followed by about 4 KiB of it (taken
    from its first MiB, in turn); with each line's number."""
    chatter, cut = _chatter(), _cut(offset)
    parts, numbers, lineno = [chatter[:cut]], [], chatter.count(b"\n", 0, cut) + 1
    for i, line in enumerate(lines):
        at = chatter.index(b"\n", (i << 12) % (1 << 20)) + 1
        gap = chatter[at: chatter.index(b"\n", at + (4 << 10)) + 1]
        parts += [(line + "\n").encode(), gap]
        numbers.append(lineno)
        lineno += 1 + gap.count(b"\n")
    return b"".join(parts), numbers


@functools.cache
def _arranged_reads(offset: int, log: str, lines: tuple[str, ...]) -> dict[str, list[object]]:
    """What the parser reads from each of ``lines`` placed together at ``offset`` in the log ``log``: one analysis,
    not one a line (at 2 MiB the parser is handed some 6,000 of the chatter's lines first)."""
    data, numbers = _arranged(offset, lines)
    with tempfile.TemporaryDirectory() as d:
        (path := Path(d) / _log_name(log)).write_bytes(data)
        (scan,) = run(path).scans
    return {line: _read_at(scan, lineno) for line, lineno in zip(lines, numbers, strict=True)}


LOGS = ("plain", "prefixed", "console")


@functools.cache
def _rounds(log: str) -> tuple[tuple[str, ...], ...]:
    """Every example line of the log ``log`` (each once: two causes may give the same line), placed together in as
    few inputs as let each line read as its cause alone be read as something: the parser reads a text, a PID, a
    host once a rank, so a line that repeats an earlier one's goes again in an input of its own kind's next round
    (decided past the head, at 64 KiB). A line and its prefixed copy, read as the same rank's, are in two logs."""
    lines = tuple(dict.fromkeys(line for _, line, _, where in _placements() if where == log))
    alone = {line for _, line, is_alone, where in _placements() if is_alone and where == log}
    rounds: list[tuple[str, ...]] = []
    while lines and lines not in rounds:
        rounds.append(lines)
        reads = _arranged_reads(SHALLOW[-1], log, lines)
        lines = tuple(line for line in lines if line in alone and not reads[line])
    return tuple(rounds)


def test_chatter_alone_is_no_cause(tmp_path):
    path = tmp_path / "rank3.log"
    path.write_bytes(_chatter())
    assert _cause(path) is None


@pytest.mark.parametrize("offset", SHALLOW, ids=lambda o: f"at{o >> 10}KiB")
@pytest.mark.parametrize("cause", sorted({kind for kind, _, _ in _examples()}))  # one test a cause: xdist shares them out
def test_every_example_line_is_its_cause_in_a_long_log(tmp_path, offset, cause):
    """Each cause's example line in a long log (a rank's own file, as torchrun --log-dir or Slurm's --output=%t
    write them), with and without a rank prefix, is read as that cause at its start and past its head, after 64 KiB
    of chatter; a line that is the cause only beside its failure is read alike at both. Deeper, one analysis a line
    would cost the parser's reading of the chatter's kept lines (0.3 s a line at 2 MiB): there the tests below hold
    what the parser reads from each line, and what each engine hands it, to what it is at 64 KiB."""
    wrong = []
    for kind, line, alone, log in (p for p in _placements() if p[0] == cause):
        want = kind if alone else _cause(_placed(tmp_path, line, log, 0))
        if offset and kind in ("store_unreachable", "store_wait") and (said := storeclient.read(line)) and said.waited:
            want = "store_wait"  # the store's wait after the chatter's progress: ranks waited for a rank still at
            # work, not a store that could not be reached (job/storewait.py)
        got = _cause(_placed(tmp_path, line, log, offset))
        if got != want:
            wrong.append(f"{kind} read as {got}, not {want}: {line[:100]}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("offset", DEEP, ids=lambda o: f"at{o >> 10}KiB")
def test_every_example_line_is_read_alike_deep_in_a_log(offset):
    """The parser reads from every example line, placed among the others after 1 MiB of chatter or where the
    reader's second block begins, what it reads from it among them after 64 KiB, though it is handed some 6,000 of
    the chatter's lines first: every example in a few analyses, not one a line and offset. Each read as its cause
    alone is read as something (the comparison is not of nothing with nothing)."""
    wrong, unread = [], []
    for log in LOGS:
        rounds = _rounds(log)
        for lines in rounds:
            near, deep = _arranged_reads(SHALLOW[-1], log, lines), _arranged_reads(offset, log, lines)
            wrong += [f"{log}: {line[:100]}" for line in lines if near[line] != deep[line]]
        unread += [line for line in rounds[-1] if not _arranged_reads(SHALLOW[-1], log, rounds[-1])[line]]
    assert wrong == [] and unread == []


def _selected(path: Path) -> list[tuple[int, bytes]]:
    """The numbered lines the reader hands the parser."""
    return list(reader.read_lines(reader.Source(path.name, str(path)), lambda problem: None))


@pytest.mark.parametrize("offset", OFFSETS, ids=lambda o: f"at{o >> 10}KiB")
def test_every_engine_keeps_every_example_line(tmp_path, offset, monkeypatch):
    """Each engine installed hands the parser every example line that is its cause alone (each example followed by
    4 KiB of chatter, the first at ``offset``), and the very lines the others hand it: the causes read behind the
    default engine above are read alike behind each."""
    for log in LOGS:  # every line is in the first round (the later ones are for the parser, which reads a text once)
        alone = {line for _, line, is_alone, where in _placements() if is_alone and where == log}
        lines = _rounds(log)[0]
        data, numbers = _arranged(offset, lines)
        (path := tmp_path / log / _log_name(log)).parent.mkdir()
        path.write_bytes(data)
        kept = {(lineno, line.encode()) for line, lineno in zip(lines, numbers, strict=True) if line in alone}
        selections = {}
        for engine in reader.ENGINES:
            monkeypatch.setattr(reader, "ENGINE", engine)
            selections[engine] = _selected(path)
            assert kept - set(selections[engine]) == set(), engine
        assert all(selection == selections[reader.ENGINES[0]] for selection in selections.values())


def test_every_engine_keeps_every_example_line_at_and_across_a_blocks_end(tmp_path, monkeypatch):
    """A block's end is where a line can be lost (cut in two, or left between two searches): each example line that
    is its cause alone starts exactly where a block begins, and further on crosses a block's end, and each engine
    hands it over whole. The blocks are made 16 KiB for this (the reader reads them alike at any size) so that every
    line meets one: at 2 MiB, one line a log would."""
    monkeypatch.setattr(reader, "BLOCK", 16 << 10)
    chatter = _chatter()
    lines = list(dict.fromkeys(line for _, line, alone, _ in _placements() if alone))
    parts, size, lineno, want, starts = [], 0, 0, [], []
    for i, line in enumerate(lines * 2):
        text = (line + "\n").encode()
        start = (i + 1) * reader.BLOCK - (0 if i < len(lines) else len(text) // 2)  # at a block's start; across its end
        at = chatter.index(b"\n", (i << 12) % (1 << 20)) + 1
        gap = chatter[at: chatter.index(b"\n", at + start - size - 1024) + 1]
        parts += [gap, b"." * (start - size - len(gap) - 1) + b"\n", text]
        lineno += gap.count(b"\n") + 2
        want.append((lineno, text[:-1]))
        starts.append(start)
        size = start + len(text)
    data = b"".join(parts)
    assert all(data[at: at + len(text)] == text and data[at - 1: at] == b"\n" and len(text) < (1 << 10)
               for at, (_, text) in zip(starts, want, strict=True))
    path = tmp_path / "rank3.log"
    path.write_bytes(data)
    for engine in reader.ENGINES:
        monkeypatch.setattr(reader, "ENGINE", engine)
        assert set(want) - set(_selected(path)) == set(), engine


# ---------------------------------------------------------------------------------------------- every fixture
def _fixture_files() -> list[Path]:
    """Every input kept here but the blind sets, which measures analyze-log and is read by no test (its README)."""
    roots = [DATA, Path(__file__).resolve().parents[1] / "examples", CONFORMANCE]
    return sorted(p for root in roots if root.is_dir() for p in root.rglob("*")
                  if p.is_file() and p.suffix not in (".json", ".py", ".md")
                  and not p.relative_to(root).parts[0].startswith("blind_threads"))


@functools.cache
def _fixture_lines() -> tuple[str, ...]:
    lines: list[str] = []
    for p in _fixture_files():
        data = p.read_bytes()
        if b"\x00" in data[:4096] or p.name.startswith("nccl_trace") or p.suffix in (".gz", ".pickle"):
            continue
        lines += data.decode("utf-8", "replace").splitlines()
    return tuple(lines)


@pytest.mark.parametrize("cause", CATALOGUE, ids=lambda c: c.kind)
def test_every_alternative_of_every_cause_matches_a_fixture_line(cause):
    """A pattern no line matches is untested or dead: each alternative has an example line or a line under
    tests/data."""
    lines = (*(e.line for e in cause.examples), *_fixture_lines())
    unmatched = [text for text in cause.alternatives
                 if not any(re.search(text, line, cause.pattern.flags) for line in lines)]
    assert not unmatched, f"{cause.kind}: no fixture line matches {unmatched}"


def _report(path: Path) -> dict:
    return report(path, per_rank=True)  # analysis_json(run(path), per_rank=True), made once (tests/analysed.py)


# Set-up facts (NCCL's ``nranks``, ``NET/``) are read in the first reader.HEAD bytes only: NCCL's INFO chatter repeats
# their words on every channel line, so a search for them deep in a log would hand most of it to the parser. This
# input states its world only in a communicator's abort line 3 bytes past the head.
PAST_THE_HEAD = {"failures/order_cycle_info/torchrun/0ef4676f-9515-4a02-9ab7-2b91a4ce3d84_b0nuz3r4/attempt_0/0/stdout.log",
                 "gpu/colltrace/order/console.log"}  # its last communicator's Init COMPLETE at byte 16,661


@functools.cache
def _full_report(path: Path) -> dict:
    """The report of a line-by-line reading (the same on every engine: no search is made)."""
    old = reader.FULL
    reader.FULL = True
    try:
        return _report(path)
    finally:
        reader.FULL = old


def _handed(path: Path) -> list[tuple[object, ...]]:
    """What the reader hands the parser from each input ``path`` names, with the problems it reports and its counts:
    all an engine changes in an analysis (evidence/scan.py feeds the parser nothing else)."""
    out: list[tuple[object, ...]] = []
    for source in reader.resolve([str(path)], lambda e: out.append((str(e),))):
        problems: list[str] = []
        lines = reader.read_lines(source, problems.append)
        got = []
        try:
            while True:
                got.append(next(lines))
        except StopIteration as stop:
            out.append((source.name, got, problems, stop.value))
        except reader.InputError as exc:
            out.append((source.name, exc.message))
    return out


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: str(p.relative_to(p.parents[1])))
def test_fast_and_full_reading_give_the_same_report(path, monkeypatch):
    """The reader's selection loses nothing a line-by-line reading finds, on every fixture kept here, with each
    search engine installed: the first engine's report is the full reading's, and every other engine hands the
    parser the very lines, problems and counts it does, so its report is the same too (an analysis an engine was
    most of this module's time)."""
    full = _full_report(path)
    if path.is_relative_to(DATA) and path.relative_to(DATA).as_posix() in PAST_THE_HEAD:
        monkeypatch.setattr(reader, "HEAD", 32 << 10)
    first, *others = reader.ENGINES
    monkeypatch.setattr(reader, "ENGINE", first)
    assert _report(path) == full, first
    handed = _handed(path)
    for engine in others:
        monkeypatch.setattr(reader, "ENGINE", engine)
        assert _handed(path) == handed, engine


def _compiled(module) -> dict[int, tuple[str, re.Pattern[str]]]:
    """Every pattern a module holds in what it assigns at its top level (a constant, a table's rows, a dataclass's
    fields) or in its classes' attributes, by identity, with where it is held."""
    names = {t.id for node in ast.parse(Path(module.__file__).read_text()).body
             for t in (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, ast.AnnAssign) else [])
             if isinstance(t, ast.Name)} - {"FORMAT"}
    classes = [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__]
    found: dict[int, tuple[str, re.Pattern[str]]] = {}

    def walk(value: object, where: str) -> None:
        if isinstance(value, re.Pattern):
            found.setdefault(id(value), (where, value))
        elif isinstance(value, (tuple, list)):
            for i, item in enumerate(value):
                walk(item, f"{where}[{i}]")
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{where}[{key!r}]")
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for field in dataclasses.fields(value):
                walk(getattr(value, field.name), f"{where}.{field.name}")

    for name in names:
        walk(getattr(module, name), f"{module.__name__.rsplit('.', 1)[-1]}.{name}")
    for cls in classes:
        for name, value in vars(cls).items():
            walk(value, f"{module.__name__.rsplit('.', 1)[-1]}.{cls.__name__}.{name}")
    return found


# Words a source's ``behind`` names that hold none of its keep words: a line holding only one is read where the reader
# hands it over for another reason (in the head, an input of at most reader.SMALL bytes read whole, beside a kept line),
# never deep in a log. Why each is left so:
# - NCCL's "busId": every line NCCL prints with it (src/init.cc, 2.7 to 2.32: a communicator's Init START and
#   COMPLETE, Destroy and Abort COMPLETE) holds "nranks", a head word, so it is handed over wherever "nranks" would be;
#   the one kind without it (2.28+'s "nRanks ... busId ... - Abort START" and Revoke lines, NCCL_DEBUG_SUBSYS=DESTROY)
#   names the GPU its communicator's Init line, printed before it with "nranks", already named.
# - world's "completed" (its row for a program's own "Rank 3 completed"): no launcher or framework prints it (a
#   script's print; the HF Trainer's "Training completed." is kept by its own words). Such a print past an input's
#   head is not read (the rank's end is still said by its launcher's exit lines, and by "rank=3 done" or "finished",
#   which are kept); keeping "completed" anywhere would hand every "Epoch 4 completed" line of a long run to the
#   parser, a cost on every chatty log for one script's word. A launcher's or framework's form would be a keep word.
UNKEPT = {("world", "completed"), ("NCCL", "busId")}


def _gates(source: LineSource) -> tuple[set[int], set[str]]:
    """The patterns a source declares (its ``patterns`` and tags, and what it reads behind them, where each is
    behind one of those) and the words in its ``behind`` that hold none of the words it is kept by."""
    declared = {id(p) for p in (*source.patterns, *source.rank_tags, *source.pid_tags, *source.path_ranks,
                                *source.prefixes, *source.headers, *source.shapes, *(m for _, m in source.rank_marks))}
    words = {*source.words, *source.head_words, *(t.word for t in source.triggers)}
    unkept = {w for b in source.behind for w in b.within if isinstance(w, str) and not any(k in w for k in words)}
    left = list(source.behind)
    while left:
        ready = [b for b in left if all(id(w) in declared if isinstance(w, re.Pattern) else
                                        any(k in w for k in words) or (source.name, w) in UNKEPT
                                        for w in b.within) and b.within]
        if not ready:
            break
        declared |= {id(p) for b in ready for p in b.patterns}
        left = [b for b in left if b not in ready]
    return declared, unkept


def test_every_pattern_a_format_module_compiles_is_declared_or_read_behind_one_that_is():
    """A pattern a module under evidence/formats/ compiles is read only where its source says: among its
    ``patterns`` (each alternative holds a word the reader keeps: the tests above), its tags and headers, its
    ``shapes``, or behind one of those or of its words (``behind``: a record's fields, a line's next part), each
    ``within`` the source's own. A pattern none declares could read a line no word keeps deep in a log, and nothing would say so."""
    declared = {id(p) for p in formats.PREFIXES}  # with the collectors' wrappers' tags (formats/collectors.py)
    unrooted, unkept = [], set()
    for source in formats.FORMATS:
        mine, words = _gates(source)
        declared |= mine
        unkept |= {(source.name, w) for w in words}
        unrooted += [f"{source.name}: {p.pattern[:60]}" for b in source.behind for p in b.patterns if id(p) not in mine]
    assert not unrooted, f"read behind nothing the source declares: {unrooted}"
    assert unkept == UNKEPT
    package = importlib.import_module("ncclcheck.evidence.formats")
    undeclared = sorted(where for info in pkgutil.iter_modules(package.__path__)
                        for key, (where, _) in _compiled(importlib.import_module(f"{package.__name__}.{info.name}")).items()
                        if key not in declared)
    assert not undeclared, f"{len(undeclared)} patterns no source declares: {undeclared}"


def test_every_declared_pattern_is_shown_by_a_sample_line_of_its_source():
    """Each pattern a source reads behind its words matches one of its sample lines (which the tests below place deep
    in a log and read back): a state a line sets, a report's count, a traceback's exception, NCCL's "Last error:",
    the host's and scheduler's records each have one (a line read only for what it stops: a sample that reads nothing
    after the line that stops it). A new pattern comes with a sample line."""
    bare = {f"{f.name}:{i}" for f in formats.FORMATS for i, pattern in enumerate(f.patterns)
            if not any(pattern.search(line) for s in f.samples for line in (*s.before, s.line))}
    assert not bare, f"declared patterns no sample line of their source shows: {sorted(bare)}"


def test_every_source_is_registered_once_with_cited_samples_that_hold_its_words():
    """A source without samples, or with a sample its own words do not gate, would be checked by nothing below."""
    assert len({f.name for f in formats.FORMATS}) == len(formats.FORMATS)
    for source in formats.FORMATS:
        assert source.samples and (source.words or source.logical), source.name  # a table's lines: by their shape
        for sample in source.samples:
            # a sample that reads nothing shows what a line before it stops (a rendezvous completed, a death signal)
            assert sample.cite.strip() and (sample.reads or sample.before), (source.name, sample.line)
            assert any(w in sample.line for w in (*source.words, *source.head_words)) or not source.words, \
                (source.name, sample.line)


SAMPLES = [pytest.param(source, sample, id=f"{source.name}:{i}")
           for source in formats.FORMATS for i, sample in enumerate(source.samples)]


@pytest.mark.parametrize(("source", "sample"), SAMPLES)
def test_every_sample_line_of_every_source_survives_the_reader_and_is_read_as_it_says(tmp_path, source, sample,
                                                                                      monkeypatch):
    """Each registered source's sample line (after the lines its report needs before it), placed at 0 and 64 KiB of
    a long ordinary log (a set-up line read behind a head word: in the head), is handed over by every engine
    installed, and the source's own reader, fed what was handed over as the parser feeds it (the lines holding one
    of its words), reads exactly what the sample says. At 1 MiB: the test below."""
    chatter = _chatter()
    gate = (*source.words, *source.head_words)
    for offset in SHALLOW if _deep(source, sample) else OFFSETS[:1]:
        cut = chatter.index(b"\n", offset - 1) + 1 if offset else 0
        lines = [*sample.before, sample.line]
        path = tmp_path / "rank3.log"
        path.write_bytes(chatter[:cut] + "".join(x + "\n" for x in lines).encode() + chatter[cut: cut + (64 << 10)])
        for engine in reader.ENGINES:
            monkeypatch.setattr(reader, "ENGINE", engine)
            texts = [(n, clean(raw)) for n, raw in _selected(path)]
            assert [t for _, t in texts if t in lines] == lines, (engine, offset)
            said = source.reader()
            # what the chatter's own lines read (NCCL's INFO facts, in a head) is not the sample's
            at = {n for n, t in texts if t in lines}
            got = [dataclasses.replace(e, loc=AT) for n, t in texts if any(w in t for w in gate) or not gate
                   for e in said.feed(t, Loc(path.name, n)) if e.loc.line in at]
            assert got == list(sample.reads), (engine, offset)


def _deep(source: LineSource, sample: Sample) -> bool:
    """Whether the sample is read anywhere in a log (a word of its own), not only in the head."""
    return any(w in sample.line for w in source.words)


@pytest.mark.parametrize("engine", reader.ENGINES)
def test_every_sample_line_is_read_as_it_says_at_1_mib(tmp_path, engine, monkeypatch):
    """Every sample read anywhere (a word of its own), placed at 1 MiB of the same ordinary log, each after the
    last with 3 KiB of chatter between them (all of them inside the reader's first block), in one input: the engine
    hands every sample's lines over, and each source's reader, fed what was handed over as the parser feeds it except the other samples' lines (so it sees
    what it sees in a log of its sample alone: the chatter before, the sample, the chatter after), reads exactly
    what the sample says. One reading for all (a log of 1 MiB a sample was three readings each, most of this
    module's time), each sample after more chatter than at 1 MiB alone, of the same kinds."""
    monkeypatch.setattr(reader, "ENGINE", engine)
    chatter = _chatter()
    deep = [(source, sample) for source in formats.FORMATS for sample in source.samples if _deep(source, sample)]
    at = chatter.index(b"\n", OFFSETS[2] - 1) + 1
    data, placed, line = [chatter[:at]], [], chatter[:at].count(b"\n") + 1
    for _, sample in deep:
        lines = [*sample.before, sample.line]
        data.append("".join(x + "\n" for x in lines).encode())
        placed.append(range(line, line + len(lines)))
        gap = chatter[at: chatter.index(b"\n", at + (3 << 10)) + 1]
        data.append(gap)
        at, line = at + len(gap), line + len(lines) + gap.count(b"\n")
    data.append(chatter[at: at + (32 << 10)])  # chatter after the last sample (the samples' room in the first block)
    path = tmp_path / "rank3.log"
    path.write_bytes(b"".join(data))
    assert path.stat().st_size < reader.BLOCK  # 1 MiB in and beyond, in the first block, as a sample at 1 MiB alone
    texts = [(n, clean(raw)) for n, raw in _selected(path)]
    handed = dict(texts)
    samples_lines = {n for lines in placed for n in lines}
    for (source, sample), lines in zip(deep, placed, strict=True):
        assert [handed.get(n) for n in lines] == [*sample.before, sample.line], (source.name, sample.line)
        gate = (*source.words, *source.head_words)
        said = source.reader()
        got = [dataclasses.replace(e, loc=AT) for n, t in texts if (n in lines or n not in samples_lines)
               and (any(w in t for w in gate) or not gate) for e in said.feed(t, Loc(path.name, n)) if e.loc.line in lines]
        assert got == list(sample.reads), (source.name, sample.line)


@pytest.mark.parametrize("engine", reader.ENGINES)
def test_a_deep_last_error_line_brings_its_reason(tmp_path, engine, monkeypatch):
    """The line under NCCL's ``Last error:`` (its reason, here with no word of its own) is handed over with it deep
    in a log, whichever word of the line was found first (here ``rror``, inside ``error:`` itself)."""
    chatter = _chatter()[: 1 << 20]
    cut = chatter.index(b"\n", 1 << 19) + 1
    path = tmp_path / "rank3.log"
    path.write_bytes(chatter[:cut] + b"ncclSystemError: System call (e.g. socket, malloc) or external library call "
                     b"failed or device error.\nLast error:\nsocketPollConnect: connect returned Connection timed "
                     b"out\n" + chatter[cut:])
    monkeypatch.setattr(reader, "ENGINE", engine)
    assert b"socketPollConnect: connect returned Connection timed out" in {line for _, line in _selected(path)}


@pytest.mark.skipif(reader._hs is None, reason="hyperscan is not installed")
def test_hyperscan_reports_a_line_once_however_often_it_holds_a_word():
    """A line holding a keep word (or a trigger) 1000 times is one report, at its newline: the cost of a block is
    one Python call a line, not one a hit."""
    line = b"[rank3]: " + b"Error WorkNCCL " * 1000 + b"\n"
    buf = bytearray(b"step 1 | loss 2.0\n" + line * 3 + b"step 2 | loss 1.9\n")
    keep, triggers = reader._hs_lines(reader._hs_database(), buf, len(buf))
    ends = [len(b"step 1 | loss 2.0\n") + len(line) * n for n in (1, 2, 3)]
    assert sorted(keep) == ends and sorted(triggers) == ends


def test_where_hyperscan_cannot_run_the_words_are_searched_one_by_one(tmp_path, monkeypatch):
    """A processor Hyperscan refuses (its database does not compile) leaves the hyperscan engine reading as the
    others do, not failing."""
    path = tmp_path / "rank3.log"
    chatter = _chatter()
    head = chatter[: chatter.index(b"\n", 1 << 20) + 1]
    path.write_bytes(head + b"RuntimeError: CUDA error: an illegal memory access was encountered\n" + head)
    want = _selected(path)
    monkeypatch.setattr(reader, "ENGINE", "hyperscan")
    monkeypatch.setattr(reader, "_hs_database", lambda: None)
    assert _selected(path) == want
    assert b"RuntimeError: CUDA error: an illegal memory access was encountered" in {line for _, line in want}


@pytest.mark.skipif(reader._hs is None, reason="hyperscan is not installed")
def test_hyperscan_finds_the_head_lines_re_finds():
    """In the head of every fixture, Hyperscan's pass for the set-up words takes the very lines ``re`` takes, and
    says ``Last error`` of the same ones; also where the head's end cuts a line."""
    def lines(hits, head: bytes) -> dict[int, bool]:
        out: dict[int, bool] = {}
        for at, last_error in hits:
            start = head.rfind(b"\n", 0, at) + 1
            out[start] = out.get(start, False) or last_error
        return out

    database = reader._hs_database()
    for path in _fixture_files():
        data = path.read_bytes()
        for cut in (reader.HEAD, 700):
            head = bytearray(data[:cut])
            assert lines(reader._head_hits(database, head, len(head)), head) == \
                lines(reader._head_hits(None, head, len(head)), head), path


@pytest.mark.skipif(reader._hs is None, reason="hyperscan is not installed")
def test_hyperscan_databases_kept_in_the_cache_find_what_the_compiled_ones_find(tmp_path, monkeypatch):
    """The second process loads the databases the first compiled; a damaged copy is compiled again and replaced."""
    monkeypatch.setenv("NCCLCHECK_CACHE_DIR", str(tmp_path / "cache"))
    chatter = _chatter()
    buf = bytearray(chatter[: chatter.index(b"\n", 1 << 20) + 1] + b"Last error:\nRuntimeError: CUDA error\n")

    def found(databases):
        return reader._hs_lines(databases, buf, len(buf)), reader._head_hits(databases, buf, reader.HEAD)

    reader._hs_database.cache_clear()
    try:
        compiled = reader._hs_database()
        (kept,) = (tmp_path / "cache").glob("reader-*.hs")
        reader._hs_database.cache_clear()
        loaded = reader._hs_database()
        assert loaded is not compiled and found(loaded) == found(compiled) and found(compiled)[0][0]
        for damage in (kept.read_bytes()[:1000], b"\x10" + b"\x00" * 999):  # cut short; a header, then no database
            kept.write_bytes(damage)
            reader._hs_database.cache_clear()
            again = reader._hs_database()
            assert found(again) == found(compiled) and kept.stat().st_size > 1000
    finally:
        reader._hs_database.cache_clear()
