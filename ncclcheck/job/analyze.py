"""``analyze-log`` as a function: inputs in, :class:`Analysis` out.

What reads (evidence/) is imported with this module; what decides (job/verdict.py and the catalogue, a third of the
start-up) is imported while the worker processes read (``_load_deciders``): forked before it, they do not need it,
and the parent would otherwise wait for them idle. A 512 MiB job on 32 cores is read in about the time the deciding
side takes to import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ncclcheck.evidence import debugserver
from ncclcheck.evidence.gcpause import paused
from ncclcheck.evidence.packed import packed_kind, read_packed
from ncclcheck.evidence.reader import Source
from ncclcheck.evidence.scan import scan_all, workers_for
from ncclcheck.evidence.types import FileScan, InputProblem
from ncclcheck.findings import Finding, Severity
from ncclcheck.job.attempts import AttemptError, global_ranks, split
from ncclcheck.ranks import rank_phrase

if TYPE_CHECKING:
    from ncclcheck.job.model import Analysis, Record
    from ncclcheck.job.records import FilePart, Merger
    from ncclcheck.job.verdict import TensorOf


def read_all(
    sources: Sequence[Source],
    on_done: Callable[[FileScan], None] | None = None,
    workers: int | None = None,
    meanwhile: Callable[[], None] | None = None,
    part: Callable[[FileScan], Any] | None = None,
    on_part: Callable[[FileScan, Any], None] | None = None,
) -> tuple[list[FileScan], list[InputProblem]]:
    """Every input as scans: logs and dumps are read, snapshot archives and evidence files unpacked.

    The problems returned are the inputs an evidence file's node could not open. ``meanwhile`` is called once,
    while worker processes read, and ``part`` in the workers on each scan they read, its answer handed to
    ``on_part`` here (see :func:`~ncclcheck.evidence.scan.scan_all`).
    """
    if workers_for(sources, workers) > 1:
        return _read_in_workers(sources, on_done, workers, meanwhile, part, on_part)
    scans: list[FileScan] = []
    problems: list[InputProblem] = []
    kinds = {src.path: kind for src in sources
             if src.path is not None and not src.stream and (kind := packed_kind(src.path)) is not None}
    packed = [src for src in sources if src.path in kinds]
    for scan in debugserver.read_dumps({p: k for p, k in kinds.items() if k.startswith("debug_")}):
        scans.append(scan)
        if on_done:
            on_done(scan)
    for src in (src for src in packed if not kinds[src.path or ""].startswith("debug_")):
        found, unopened = read_packed(src.name, src.path or src.name, kinds[src.path or ""])
        problems += unopened
        for scan in found:
            scans.append(scan)
            if on_done:
                on_done(scan)
    packed_ids = {id(src) for src in packed}  # 2,048 evidence files were each looked for in a list of the others;
    # by identity, since a Source hashes its fields anew at each lookup
    scans += (s for s in scan_all([src for src in sources if id(src) not in packed_ids], on_done, workers, meanwhile)
              if isinstance(s, FileScan))
    return scans, problems


def _read_in_workers(
    sources: Sequence[Source],
    on_done: Callable[[FileScan], None] | None,
    workers: int | None,
    meanwhile: Callable[[], None] | None,
    part: Callable[[FileScan], Any] | None,
    on_part: Callable[[FileScan, Any], None] | None,
) -> tuple[list[FileScan], list[InputProblem]]:
    """:func:`read_all` where worker processes read: each looks at its own inputs' heads and hands back the archives,
    evidence files and debug dumps among them unread (evidence/packed.py), so that the look is not the main
    process's (at 100,000 files ~1 s of it before any worker started). The scans in the same order as read in one
    process: the debug-server dumps (read here, together), the archives' and evidence files', the logs'."""
    plain: list[FileScan] = []
    unpacked: list[FileScan] = []
    problems: list[InputProblem] = []
    debug: dict[str, str] = {}
    for src, item in zip(sources, scan_all(list(sources), on_done, workers, meanwhile, part, on_part, look=True),
                         strict=True):
        if isinstance(item, FileScan):
            plain.append(item)
        elif item.kind.startswith("debug_"):
            debug[src.path or src.name] = item.kind
        else:
            found, unopened = read_packed(src.name, src.path or src.name, item.kind)
            unpacked += found
            problems += unopened
            if on_done:
                for scan in found:
                    on_done(scan)
    dumps = debugserver.read_dumps(debug) if debug else []
    if on_done:
        for scan in dumps:
            on_done(scan)
    return [*dumps, *unpacked, *plain], problems


def _load_deciders() -> None:
    """Import what decides (the verdict, the catalogue, the job model): called while the workers read."""
    import ncclcheck.job.records
    import ncclcheck.job.runs
    import ncclcheck.job.verdict  # noqa: F401  (the import is the work)


def analyze(
    sources: Sequence[Source],
    dtype: str = "float32",
    on_done: Callable[[FileScan], None] | None = None,
    workers: int | None = None,
    problems: Sequence[InputProblem] = (),
    tensor_of: TensorOf | None = None,
    attempt: int | str = "last",
) -> Analysis:
    """Scan every source, merge the timeout records and decide the verdict.

    ``problems`` are inputs that could not even be opened (found while resolving paths); they are
    reported with the problems found while reading, so that the result names every input.
    """
    early = Early()

    def done(scan: FileScan) -> None:
        early.add(scan)
        if on_done is not None:
            on_done(scan)

    with paused():  # the scans, as they come back, and the model built from them are kept to the end
        scans, unopened = read_all(sources, done, workers, _load_deciders, _file_part, early.part)
        return analyze_scans(scans, dtype, (*problems, *unopened), tensor_of, attempt, early)


def _file_part(scan: FileScan) -> FilePart | None:
    """One input's records merged alone, in the worker that read it (job/records.py's ``file_part``; imported there,
    where the worker first runs it on an input of PART_MIN_MENTIONS or more, evidence/scan.py: a worker that reads
    none never imports the deciding side)."""
    from ncclcheck.job.records import file_part

    return file_part(scan)


class Early:
    """The timeout records merged while the worker processes read (issue 42): the main process takes each chunk's
    scans as it comes back and would otherwise wait idle for the next; at 100,000 ranks the merge is about two
    seconds of one core. Each input's own records come merged from its worker (``part``): where they cannot merge
    with an earlier input's, they are appended as they are. ``_one`` takes them only where its attempt's scans are
    these very scans in this order (one attempt, no rank moved, the inputs read in name order), and merges again
    otherwise."""

    def __init__(self) -> None:
        self.merger: Merger | None = None
        self.ids: list[int] = []
        self.last = ""
        self.off = False
        self.parts: dict[int, FilePart] = {}  # by the scan's id: handed over just before the scan itself

    def part(self, scan: FileScan, part: FilePart | None) -> None:
        if part is not None:
            self.parts[id(scan)] = part

    def add(self, scan: FileScan) -> None:
        part = self.parts.pop(id(scan), None)
        if self.off or any(p.fatal for p in scan.problems):
            return  # analyze_scans leaves out an input that could not be read
        if scan.file < self.last:  # analyze_scans sorts by name (a stable sort): the merge would be in another order
            self.off, self.merger = True, None
            return
        if self.merger is None:
            from ncclcheck.job.records import Merger  # imported here: after the workers started

            self.merger = Merger()
        self.last = scan.file
        self.ids.append(id(scan))
        self.merger.add(scan, part)

    def take(self, scans: Sequence[FileScan]) -> list[Record] | None:
        """The records of ``scans`` if they are the scans merged here, in the same order; else None."""
        merger, self.merger = self.merger, None  # asked once: taken, or its builders let go
        if merger is None or len(scans) != len(self.ids) or any(
                id(s) != i for s, i in zip(scans, self.ids, strict=True)):
            return None
        return merger.records()


def analyze_scans(scans: Sequence[FileScan], dtype: str = "float32", problems: Sequence[InputProblem] = (),
                  tensor_of: TensorOf | None = None, attempt: int | str = "last", early: Early | None = None
                  ) -> Analysis:
    """The verdict from scans already read (here, or on the nodes and carried in evidence files).

    Scans are taken in file-name order, so that the answer does not depend on how the inputs were given or split
    among evidence files. A restarted job's attempts are analysed apart (:mod:`ncclcheck.job.attempts`):
    ``attempt`` is the one analysed (its number, or "last"), or "all" for every one (``Analysis.attempts``); the
    others are summarised in one finding each. ``early``: the records merged while the scans were read, if any.
    """
    with paused():
        return _analyze_scans(scans, dtype, problems, tensor_of, attempt, early)


def _analyze_scans(scans: Sequence[FileScan], dtype: str, problems: Sequence[InputProblem],
                   tensor_of: TensorOf | None, attempt: int | str, early: Early | None) -> Analysis:
    scans = sorted(scans, key=lambda s: s.file)
    attempts = split(global_ranks([s for s in scans if not any(p.fatal for p in s.problems)]))
    every = [_one(a, dtype, tensor_of, early) for a in attempts]
    n = len(every)
    if attempt in ("last", "all"):
        index = n - 1
    elif isinstance(attempt, int) and 0 <= attempt < n:
        index = attempt
    else:
        raise AttemptError(f"--attempt {attempt}: the inputs hold {n} attempt{'s' if n != 1 else ''} "
                         f"(0{f'-{n - 1}' if n > 1 else ''})")
    chosen = every[index]
    if n > 1:
        others = tuple(_attempt_finding(i, n, a, index) for i, a in enumerate(every) if i != index)
        v = chosen.verdict
        chosen = replace(chosen, verdict=replace(v, findings=(*v.findings, *others)), attempt=index, attempt_count=n)
        if attempt == "all":
            chosen = replace(chosen, attempts=tuple(replace(a, attempt=i, attempt_count=n) for i, a in enumerate(every)))
    return replace(chosen, problems=(*problems, *(p for s in scans for p in s.problems)))


def _one(scans: list[FileScan], dtype: str, tensor_of: TensorOf | None, early: Early | None = None) -> Analysis:
    """One attempt: its records merged, a run appended to the same file (a restart by hand) set apart."""
    from ncclcheck.job.records import merge_records
    from ncclcheck.job.runs import by_file, find_restart, last_run
    from ncclcheck.job.verdict import decide

    records = (early.take(scans) if early is not None else None) or merge_records(scans)
    per_file = by_file(records)
    restarts = [r for r in (find_restart(s, per_file.get(s.file, ())) for s in scans) if r is not None]
    if restarts:
        cut = {r.file: r.line for r in restarts}
        scans = [last_run(s, cut[s.file]) if s.file in cut else s for s in scans]
        records = merge_records(scans)
    return decide(scans, records, dtype, restarts, tensor_of)


def _attempt_finding(i: int, n: int, a: Analysis, analysed: int) -> Finding:
    """One line for an attempt not analysed here: how it ended, with its evidence."""
    v = a.verdict
    when = "an earlier attempt: torchrun restarted the workers after it" if i < analysed else "a later attempt"
    culprit = f" (culprit: {rank_phrase(v.culprit_ranks)})" if v.culprit_ranks else ""
    head = next((f for f in v.findings if f.code == v.kind.value.replace("_", "-")), None)
    return Finding(Severity.INFO, "earlier-attempt" if i < analysed else "later-attempt",
                   f"Attempt {i} of {n} ({when}) ended in {v.kind.value}{culprit}: {v.summary} It is a job of its "
                   f"own: analyse it with --attempt {i}.", head.evidence if head is not None else ())
