"""How many ranks the job has, and which line says so.

The world is taken only from lines that state it (an initialization line's ``size:``, a launcher's echo, a
dump's member list) or show a rank of it (a ``[rankN]:`` prefix, a group's members). torchrun's failure summary
is not one: it lists the processes that failed, and a summary naming rank 1 says nothing of ranks 2-7. Where
nothing states the world it is unknown: no rank is dropped and no count invented.

A statement is *exact* (it gives the size) or a *lower bound* (it shows a rank, or a communicator that may be a
sub-group's). The largest wins, an exact one before a bound of the same size; the sources are ordered so that
the line quoted is the most direct one. The world stays a number with its source: nothing here lists its ranks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ncclcheck.evidence.tables import firsts
from ncclcheck.evidence.types import FileScan, Loc

# What each kind of statement is, in words, and whether it states the size; strongest (most direct) first.
KINDS: dict[str, tuple[str, bool]] = {
    "dump": ("a flight-recorder dump's member list of the world group", True),
    "fr_trace": ("the debug server's flight-recorder tables (the world group's size)", True),
    "init_line": ("ProcessGroupNCCL's initialization line (size:)", True),
    "launcher": ("the launcher's or the script's echo of the world size", True),
    "nodes_x_procs": ("torchrun's --nnodes times --nproc-per-node", True),
    "accelerate": ("Accelerate's \"Num processes\"", True),
    "lightning": ("Lightning's \"MEMBER: k/N\"", True),
    "logger": ("a logger's rank tag \"(k/N)\" (icefall's setup_logger)", True),
    "gather": ("an all-gather of the world group (NumelOut / NumelIn)", True),
    "nccl_nranks": ("NCCL's communicator size (nranks; a sub-group's is smaller)", False),
    "group_members": ("the member list of a process group's flight-recorder dump", False),
    "monitored_barrier": ("the ranks monitored_barrier names", False),
    "desync": ("the ranks of PyTorch's desync report", False),
    "ranks_seen": ("the highest global rank seen ([rankN]:, log path, dump)", False),
}
_FACT_KIND = {"world_size": "init_line", "launcher_world": "launcher", "accelerate_world": "accelerate",
              "lightning_world": "lightning", "logger_world": "logger", "nccl_nranks": "nccl_nranks",
              "fr_trace_world": "fr_trace"}
WORLD_FACTS = frozenset((*_FACT_KIND, "nnodes", "nproc_per_node"))


@dataclass(frozen=True)
class WorldStatement:
    """One line's statement of the world: ``size`` ranks (exactly, or at least), of ``kind`` (a key of KINDS)."""

    size: int
    kind: str
    loc: Loc | None

    @property
    def exact(self) -> bool:
        return KINDS[self.kind][1]

    def words(self) -> str:
        """``8 ranks, stated by ProcessGroupNCCL's initialization line (size:) at rank3.log:2``."""
        at = f" at {self.loc}" if self.loc is not None else ""
        if self.exact:
            return f"{self.size:,} ranks, stated by {KINDS[self.kind][0]}{at}"
        return f"at least {self.size:,} ranks, from {KINDS[self.kind][0]}{at}"


_RANKED = {kind: i for i, kind in enumerate(KINDS)}  # KINDS' order, looked up once a statement


def _strength(s: WorldStatement) -> tuple[int, int, int]:
    return (s.size, s.exact, -_RANKED[s.kind])


def strongest(statements: Iterable[WorldStatement]) -> WorldStatement | None:
    """The largest statement, an exact one before a bound of the same size; None when nothing states the world."""
    return max(statements, key=_strength, default=None)


_STATING = frozenset({*_FACT_KIND, "monitored_barrier_missing", "nnodes", "nproc_per_node"})  # the keys read below


def statements(scans: Sequence[FileScan]) -> list[WorldStatement]:
    """The statements of the world the scans' lines make (the job model adds its groups' and records'). A world
    size a fact states again (every rank's init line states it: 100,000 statements of one size) is kept the first
    time only: :func:`strongest` takes the first of equal statements, so the later ones could never be chosen."""
    out: list[WorldStatement] = []
    stated: set[tuple[int, str]] = set()
    for s in scans:
        nodes = procs = None
        # A table's rows at the first line of each key and value (evidence/tables.py): a later line equal to one
        # states nothing new (the same size of the same kind, or a later nnodes / nproc_per_node of the same value)
        for f in firsts(s.facts, ("key", "value"), _STATING.__contains__):
            kind = _FACT_KIND.get(f.key)
            if kind is not None and f.value.isdigit() and (size := int(f.value)) > 0:
                if (size, kind) not in stated:
                    stated.add((size, kind))
                    out.append(WorldStatement(size, kind, f.loc))
            elif f.key == "monitored_barrier_missing":
                out.append(WorldStatement(max(map(int, f.value.split(","))) + 1, "monitored_barrier", f.loc))
            elif f.key == "nnodes" and f.value.isdigit():
                nodes = nodes or f
            elif f.key == "nproc_per_node" and f.value.isdigit():
                procs = procs or f
        if nodes is not None and procs is not None and int(nodes.value) * int(procs.value) > 0:
            later = max((nodes, procs), key=lambda f: f.loc.line)
            out.append(WorldStatement(int(nodes.value) * int(procs.value), "nodes_x_procs", later.loc))
        for ds in s.desync:
            out += [WorldStatement(max(r) + 1, "desync", ds.loc) for *_, r in ds.snapshot if r]
        if s.ranks_seen:
            out.append(WorldStatement(max(s.ranks_seen) + 1, "ranks_seen", Loc(s.file, 0)))
    return out
