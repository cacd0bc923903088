"""The path an NCCL error took up NCCL's own calls (its return trace), and what that path says: the layer it came
through and whether it failed the communicator's set-up or a call the program made on a communicator already made.

NCCL logs each frame an error passes on its way up (``file:line -> N``, evidence/formats/returntrace.py; src/include/
checks.h's NCCLCHECK), after the WARN line that states it. The frames under one WARN of one process are its chain,
innermost first. What the chain says:

* The layer. The file of the innermost frame that job/layers.toml places, past the shared helpers: the socket
  functions (include/socket.h, misc/socket.cc, os/linux_socket*) serve the bootstrap, the socket transport, the
  InfiniBand transport's connection exchange and the proxy alike, so their caller names the layer (a ``Call to recv
  failed`` under ``transport/net_ib.cu`` is the IB transport's set-up). The API's own files (init, enqueue, group)
  place no layer; they say the phase.
* The phase. A frame in init.cc (ncclCommInitRank and its asynchronous job, init.cu before 2.5) or bootstrap.cc is
  the communicator's set-up; a frame in enqueue.cc (ncclEnqueueCheck, which every collective and point-to-point call
  enters), misc/argcheck.cc or include/common_coll.h (its argument checks, 2.3-2.4) with none of those is a call the
  program made on a communicator already made: NCCL refused or failed that call (an ``nccl_error`` of that call),
  not the host's set-up. group.cc alone says neither (its asynchronous jobs are set-ups and connections alike).

The return code is ncclResult_t (src/nccl.h.in): 1 unhandled CUDA error, 2 system error, 3 internal error, 4 invalid
argument, 5 invalid usage, 6 remote error.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ncclcheck.evidence.formats.ncclsetup import HEADER_STEP, TESTS_STEP
from ncclcheck.evidence.formats.returntrace import KEY, TEST_KEY, Frame, frame
from ncclcheck.evidence.tables import rows_with
from ncclcheck.evidence.types import FileScan, Loc
from ncclcheck.job.layers import Layer, file_layer

_UNDER_SRC = re.compile(r"^(?:.*/)?src/")
# The socket helpers every layer calls: their caller names the layer.
_HELPERS = re.compile(r"^(?:include/socket\.h|misc/socket\.cc|os/linux_socket\w*\.cc|include/net\.h)$")
SETUP_FILES = re.compile(r"^(?:init\.(?:cc|cu)|bootstrap\.(?:cc|cu)|init_nvtx\.cc)$")
CALL_FILES = re.compile(r"^(?:enqueue\.(?:cc|cu)|misc/argcheck\.cc|include/common_coll\.h|collectives/[\w.]+)$")
SETUP, CALL = "set-up", "call"
RESULTS = {1: "unhandled CUDA error", 2: "system error", 3: "internal error", 4: "invalid argument",
           5: "invalid usage", 6: "remote error", 7: "in progress"}
_GAP = 8  # lines between two frames of one chain at most (another process's lines may come between)


def _rel(path: str) -> str:
    return _UNDER_SRC.sub("", path)


@dataclass(frozen=True)
class Chain:
    """One error's return trace: the line it follows (its WARN, where the inputs hold one: ``at``), that line's
    printed file, the frames innermost first, and the rank that printed them."""

    at: Loc
    warn_file: str | None
    frames: tuple[Frame, ...]
    rank: int | None

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(_rel(f) for f in ((self.warn_file,) if self.warn_file else ()) + tuple(f.file for f in
                                                                                              self.frames))

    @property
    def layer(self) -> Layer | None:
        """The layer the error came up through: the innermost file past the socket helpers that a layer holds
        (the helpers' own layer where no caller has one); the API's files are no layer."""
        placed = [(f, x) for f in self.files if (x := file_layer(f)) is not None and x.id != "api"]
        outer = [x for f, x in placed if not _HELPERS.match(f)]
        return outer[0] if outer else placed[0][1] if placed else None

    @property
    def phase(self) -> str:
        """``set-up`` where a frame is the communicator's set-up, ``call`` where one is a call's launch or its
        argument check and none is set-up, else empty."""
        files = [_rel(f.file) for f in self.frames]
        if any(SETUP_FILES.match(f) for f in files):
            return SETUP
        if any(CALL_FILES.match(f) for f in files):
            return CALL
        return ""

    @property
    def code(self) -> int | None:
        return self.frames[-1].code if self.frames else None

    def words(self, limit: int = 6) -> str:
        """The frames as NCCL printed them, innermost first (a long chain's middle left out)."""
        said = [str(f) for f in self.frames]
        if len(said) > limit:
            said = [*said[: limit - 2], "...", *said[-1:]]
        return ", ".join(said)


def read_chains(scans: Sequence[FileScan]) -> tuple[Chain, ...]:
    """Every return trace in the inputs, each with the error line it follows (within its input, of its rank)."""
    out: list[Chain] = []
    for s in scans:
        frames = [(f.loc, f.who.rank, fr) for f in rows_with(s.facts, "key", KEY.__eq__)
                  if f.key == KEY and (fr := frame(f.value)) is not None]
        if not frames:
            continue
        files = {f.loc: f.value for f in rows_with(s.facts, "key", "nccl_warn_file".__eq__)
                 if f.key == "nccl_warn_file"}
        errors = sorted({e.loc.line: (e.loc, e.who.rank) for e in s.errors}.values(), key=lambda x: x[0].line)
        out.extend(_chains(frames, errors, files))
    return tuple(out)


def _chains(frames: Iterable[tuple[Loc, int | None, Frame]], errors: Sequence[tuple[Loc, int | None]],
            files: Mapping[Loc, str]) -> list[Chain]:
    """The frames of one input cut into chains: by process (rank, then NCCL's host:pid), a new chain at each error
    line of that process or after a gap."""
    runs: dict[tuple[int | None, str], list[list[tuple[Loc, Frame]]]] = defaultdict(list)
    for loc, rank, fr in frames:
        mine = runs[(rank, fr.process)]
        last = mine[-1][-1][0] if mine else None
        cut = last is None or loc.line - last.line > _GAP or any(
            last.line < e.line < loc.line for e, r in errors if r == rank)
        if cut:
            mine.append([])
        mine[-1].append((loc, fr))
    out = []
    for (rank, _), chains in runs.items():
        for chain in chains:
            first = chain[0][0]
            before = [e for e, r in errors if r == rank and e.line < first.line and first.line - e.line <= _GAP]
            at = before[-1] if before else first
            out.append(Chain(at, files.get(at), tuple(f for _, f in chain), rank))
    return sorted(out, key=lambda c: c.at.line)


def chain_at(chains: Iterable[Chain], loc: Loc) -> Chain | None:
    """The chain that follows the line at ``loc``, if any."""
    return next((c for c in chains if c.at == loc), None)


def first_chain(chains: Sequence[Chain]) -> Chain | None:
    """The first error's chain: the earliest in the first input that has one."""
    return chains[0] if chains else None


@dataclass(frozen=True)
class TestCheck:
    """nccl-tests' line for one of its NCCL calls that failed (``where``: the test's file and line) and how far the
    test had got by its own lines: ``call`` where it had printed its result table's header (the communicators were
    made, the collectives ran), ``set-up`` where it had printed its device table and no header (src/util.cu prints
    the devices before it makes the communicators, the header after), else empty (nothing says)."""

    loc: Loc
    where: str
    phase: str


def read_test_checks(scans: Sequence[FileScan]) -> tuple[TestCheck, ...]:
    """Every nccl-tests failure line, with the phase its input's earlier lines place it in
    (evidence/formats/ncclsetup.py's steps)."""
    out = []
    for s in scans:
        checks = [f for f in rows_with(s.facts, "key", TEST_KEY.__eq__) if f.key == TEST_KEY]
        if not checks:
            continue
        steps = [(f.loc.line, f.value) for f in rows_with(s.facts, "key", "setup".__eq__)
                 if f.key == "setup" and f.value in (HEADER_STEP, TESTS_STEP)]
        for c in checks:
            seen = {v for line, v in steps if line < c.loc.line}
            phase = CALL if HEADER_STEP in seen else SETUP if TESTS_STEP in seen else ""
            out.append(TestCheck(c.loc, c.value, phase))
    return tuple(out)
