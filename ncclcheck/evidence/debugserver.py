"""PyTorch's distributed debug server's periodic dumps: stacks as each rank's live stack, the flight recorder's
tables as group members and the collectives ranks never joined, the store's and wait counters' rank addresses.

``torch.distributed.debug.start_debug_server(dump_dir=..., dump_interval=...)`` (PyTorch 2.10 and later,
torch/distributed/debug/_frontend.py's ``PeriodicDumper``) has rank 0 fetch every rank's state over HTTP and write
one file per kind and time: ``stacks_20261127_145555.txt`` (``StacksHandler.dump``: every rank's Python stacks, from
the worker's ``dump_traceback`` handler, in faulthandler's layout), ``fr_trace_*`` (the flight recorder's tables),
``tcpstore_*``, ``wait_counters_*``. A stacks file is told by its content: its first line is ``=== Rank N:
http://host:port/handler/dump_traceback? ===``, or ``PARTIAL DATA: k/n workers responded`` when some rank did not
answer (each such rank's section then says ``Error: 503``). ``Rank N`` is the global rank (the worker servers register
under the ``RANK`` of their process). Of several stacks files, the newest (by the time in its name) is where the job
is: older ones are named as read and left. Recorded: tests/data/gpu/nccl232/hang/debug/ (NCCL, 2 x H200) and
tests/data/debug_server/ (gloo, CPU).

``fr_trace_*`` (``FlightRecorderHandler.dump``) is the flight-recorder analyzer's database of every rank's buffer,
printed as tabulate's plain tables under ``=== FR Trace ===`` (the CPU buffer) and ``=== FR Trace NCCL ===``:
``--- Groups ---`` (id, desc, size), ``--- Memberships ---`` (group_id, global_rank), ``--- Collectives ---`` (one row
per collective the analyzer could not match on every rank: its sequence number, ``pg_desc`` as ``name:desc``,
``collective_name``, sizes, ``expected_ranks``, ``collective_state`` and ``missing_ranks``, the global ranks whose
buffer lacks it: torch/distributed/flight_recorder/components/utils.py, "Not all ranks joining collective"). A rank
missing from a collective the others hold never issued it. ``tcpstore_*`` lists the store's keys, among them
``debug_server/rankN: b'http://host:port'`` (each rank's debug server); ``wait_counters_*`` has a ``=== Rank N:
http://host:port/handler/wait_counter_values? ===`` head per rank: both are read for each rank's host.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence

from ncclcheck.evidence.frdump import Frame
from ncclcheck.evidence.types import Clue, Fact, FileScan, InputProblem, LiveStack, LiveThread, Loc, Who

HEAD = re.compile(r"^=== Rank (?P<rank>\d+): https?://(?P<host>[^:/\s]+|\[[^\]]+\])(?::\d+)?/handler/dump_traceback")
# Any handler's section head (wait counters, and the stacks above), and the store's key of a rank's debug server.
RANK_HEAD = re.compile(r"^=== Rank (?P<rank>\d+): https?://(?P<host>[^:/\s]+|\[[^\]]+\])(?::\d+)?/handler/\w+")
STORE_KEY = re.compile(r"^debug_server/rank(?P<rank>\d+): b'https?://(?P<host>[^:/\s']+|\[[^\]]+\])")
FR_TRACE = "=== FR Trace"
PARTIAL = "PARTIAL DATA:"
THREAD = re.compile(r"^(?:Current thread|Thread) (?P<id>0x[0-9a-f]+) \(most recent call first\):")
FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<name>\S+)')
STAMP = re.compile(r"_(?P<stamp>\d{8}_\d{6})\.txt$")
# The module every torch.distributed collective is defined in: the outermost frame there is the call user code made.
C10D = "torch/distributed/distributed_c10d.py"


def is_stacks(head: bytes) -> bool:
    """Whether a file's first bytes are a debug server's stacks dump."""
    text = head.decode("utf-8", "replace")
    first = text.split("\n", 1)[0]
    if first.startswith(PARTIAL):
        return "/handler/dump_traceback" in text
    return bool(HEAD.match(first))


def is_fr_trace(head: bytes) -> bool:
    """Whether a file's first bytes are a debug server's flight-recorder tables (``fr_trace_*``)."""
    text = head.decode("utf-8", "replace")
    return text.startswith(FR_TRACE) or (text.startswith(PARTIAL) and FR_TRACE in text)


def is_rank_addresses(head: bytes) -> bool:
    """Whether a file's first bytes are a debug server's store keys or wait counters (``tcpstore_*``,
    ``wait_counters_*``): read for the host of each rank only."""
    first = head.decode("utf-8", "replace").split("\n", 1)[0]
    return bool(STORE_KEY.match(first) or (RANK_HEAD.match(first) and not HEAD.match(first)))


def read_dumps(kinds: dict[str, str]) -> list[FileScan]:
    """Every debug-server dump given (path: its kind from ``evidence.packed.packed_kind``): of each kind of a job's
    periodic dumps the newest is read, the older ones named as read and left."""
    out: list[FileScan] = []
    for kind, read in (("debug_stacks", read_stacks), ("debug_fr_trace", _newest(read_fr_trace)),
                       ("debug_ranks", _newest(read_rank_addresses))):
        paths = [p for p, k in kinds.items() if k == kind]
        out += read(paths) if paths else []
    return out


def _newest(read: Callable[[str], FileScan]) -> Callable[[Sequence[str]], list[FileScan]]:
    """``read`` of the newest dump of each series (a folder's files of one name before their time stamp)."""
    def newest(paths: Sequence[str]) -> list[FileScan]:
        series: dict[str, list[str]] = {}
        for p in paths:
            series.setdefault(STAMP.sub("", p), []).append(p)
        out: list[FileScan] = []
        for group in series.values():
            last, older = _by_time(group)
            out += [*older, read(last)]
        return out
    return newest


def _by_time(paths: Sequence[str]) -> tuple[str, list[FileScan]]:
    """The newest of periodic dumps (by the time in its name), and a note for each older one."""
    newest = max(paths, key=lambda p: (m["stamp"] if (m := STAMP.search(p)) else "", p))
    return newest, [FileScan(p, None, 0, 0, (), problems=(InputProblem(
        p, f"an earlier debug-server dump than {os.path.basename(newest)}, which is read", False),))
        for p in paths if p != newest]


def read_stacks(paths: Sequence[str]) -> list[FileScan]:
    """One scan per rank of the newest stacks dump (its stacks as live stacks, its host as a fact); a scan with a
    note for each older one and one for each rank the dump could not fetch."""
    newest, out = _by_time(paths)
    try:
        with open(newest, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        return [*out, FileScan(newest, None, 0, 0, (), problems=(InputProblem(newest, exc.strerror or str(exc), True),))]
    return out + _ranks(newest, lines)


def _ranks(path: str, lines: list[str]) -> list[FileScan]:
    """Each ``=== Rank N`` section of a stacks dump as that rank's scan."""
    heads = [(i, m) for i, text in enumerate(lines) if (m := HEAD.match(text))]
    scans = []
    for k, (i, m) in enumerate(heads):
        end = heads[k + 1][0] if k + 1 < len(heads) else len(lines)
        rank, host, loc = int(m["rank"]), m["host"].strip("[]"), Loc(path, i + 1)
        body = lines[i + 1:end]
        facts = (Fact(Who(global_rank=rank), "host", host, loc),)
        if any(t.startswith("Error: ") for t in body[:2]):
            said = next(t for t in body if t.startswith("Error: "))
            scans.append(FileScan(path, rank, len(lines), 0, (rank,), facts=facts, problems=(InputProblem(
                path, f"the debug server could not fetch rank {rank}'s stacks ({said})", False),)))
            continue
        threads = _threads(body)
        main = next((t for t in threads if t.frames), None)
        ordered = (main, *(t for t in threads if t is not main)) if main else threads
        stack = LiveStack(rank, 0, host, ordered, _collective(main.frames) if main else None, None, loc)
        scans.append(FileScan(path, rank, len(lines), 0, (rank,), facts=facts, live=(stack,)))
    return scans


def _threads(body: list[str]) -> tuple[LiveThread, ...]:
    """faulthandler's threads, frames innermost first; the thread serving the dump has no Python frame."""
    threads: list[tuple[str, list[Frame]]] = []
    for text in body:
        if m := THREAD.match(text):
            threads.append((m["id"], []))
        elif threads and (m := FRAME.match(text)):
            threads[-1][1].append(Frame(m["name"], m["file"], int(m["line"])))
    return tuple(LiveThread(name, tuple(frames)) for name, frames in threads)


def _collective(frames: tuple[Frame, ...]) -> str | None:
    """The torch.distributed call the rank is in: the outermost frame in distributed_c10d.py (public names only)."""
    for f in reversed(frames):
        if f.file.replace("\\", "/").endswith(C10D) and not f.name.startswith("_"):
            return f.name
    return None


def _read(path: str) -> tuple[bytes, list[str]] | FileScan:
    """A dump's bytes and lines, or the scan saying it could not be read."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        return FileScan(path, None, 0, 0, (), problems=(InputProblem(path, exc.strerror or str(exc), True),))
    return data, data.decode("utf-8", "replace").splitlines()


def read_rank_addresses(path: str) -> FileScan:
    """Each rank a store-keys or wait-counters dump names, with its host."""
    if isinstance(read := _read(path), FileScan):
        return read
    data, lines = read
    facts = {int(m["rank"]): Fact(Who(global_rank=int(m["rank"])), "host", m["host"].strip("[]"), Loc(path, i + 1))
             for i, text in enumerate(lines) if (m := STORE_KEY.match(text) or RANK_HEAD.match(text))}
    return FileScan(path, None, len(lines), len(data), tuple(sorted(facts)), facts=tuple(facts.values()))


def read_fr_trace(path: str) -> FileScan:
    """A flight-recorder tables dump: the world group's size, and each collective a rank never joined (a clue on
    that rank, in the analyzer's terms)."""
    if isinstance(read := _read(path), FileScan):
        return read
    data, lines = read
    facts: list[Fact] = []
    clues: list[Clue] = []
    for name, first, rows in _tables(lines):
        if name == "Groups":
            for n, row in rows:
                if row.get("desc") == "default_pg" and row.get("size", "").isdigit():
                    facts.append(Fact(Who(), "fr_trace_world", row["size"], Loc(path, first + n)))
        elif name == "Collectives":
            for n, row in rows:
                missing = _rank_set(row.get("missing_ranks", ""))
                if not missing:
                    continue
                joined = sorted(set(_rank_set(row.get("expected_ranks", ""))) - set(missing))
                said = (f"the flight recorder's analysis (debug server): rank {{rank}} never issued collective "
                        f"#{row.get('collective_seq_id', '?')} ({row.get('collective_name', '?')}, input sizes "
                        f"{row.get('input_sizes', '?')}) of group {row.get('pg_desc', '?')}"
                        + (f", which rank{'s' if len(joined) > 1 else ''} {', '.join(map(str, joined))} issued "
                           f"({row.get('collective_state', '?')})" if joined else ""))
                clues += [Clue(Who(global_rank=r), "flight_recorder", said.format(rank=r), Loc(path, first + n))
                          for r in missing]
    # The members' table sizes the world; a member is not seen for being listed (where it is, the rows do not say)
    return FileScan(path, None, len(lines), len(data), (), clues=tuple(clues), facts=tuple(facts))


def _tables(lines: list[str]) -> list[tuple[str, int, list[tuple[int, dict[str, str]]]]]:
    """Each ``--- Name ---`` table: its name, the line number of its header, and its rows (offset from the header,
    cells by column name). tabulate's plain layout pads every column to one width and parts columns by two spaces,
    so a column is a run of positions that some line of the table fills; a cell may hold single spaces ({0, 1})."""
    out = []
    starts = [i for i, text in enumerate(lines) if text.startswith("--- ") and text.endswith(" ---")]
    for k, i in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        body = lines[i + 1:end]
        while body and (not body[-1].strip() or body[-1].startswith("===")):
            body.pop()
        if not body:
            continue
        spans = _columns(body)
        names = [body[0][a:b].strip() for a, b in spans]
        rows = [(n, {name: text[a:b].strip() for name, (a, b) in zip(names, spans, strict=True)})
                for n, text in enumerate(body[1:], start=2)]
        out.append((lines[i].strip("- "), i + 1, rows))
    return out


def _columns(body: list[str]) -> list[tuple[int, int]]:
    """The character spans of a plain table's columns: runs of filled positions parted by at least two blanks."""
    width = max(map(len, body))
    filled = [any(j < len(t) and t[j] != " " for t in body) for j in range(width)]
    spans: list[tuple[int, int]] = []
    j = 0
    while j < width:
        if not filled[j]:
            j += 1
            continue
        a = j
        while j < width and (filled[j] or (j + 1 < width and filled[j + 1])):  # one blank stays inside a cell
            j += 1
        spans.append((a, j))
    return spans


def _rank_set(cell: str) -> list[int]:
    """The ranks of a printed set (``{0, 1}``); none for ``None``, ``set()`` or an empty cell."""
    return sorted(int(x) for x in re.findall(r"\d+", cell)) if cell.startswith("{") else []
