"""The result of analyze-log: merged timeout records, the verdict and the per-rank table."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ncclcheck.evidence.types import PG, FileScan, Loc, RankError
from ncclcheck.findings import Finding
from ncclcheck.job.franalysis import FrResult


@dataclass(frozen=True)
class Record:
    """One distinct timeout event (rank, PG, SeqNum), merged over all its printings."""

    rank: int | None
    global_rank: int | None
    pg: PG | None
    seq: int | None
    op_type: str | None
    numel_in: int | None
    numel_out: int | None
    tensor_shape: str | None
    timeout_ms: int | None
    ran_for_ms: int | None
    last_enqueued: int | None
    last_completed: int | None
    evidence: tuple[str, ...]
    occurrences: int
    loc: Loc
    path_rank: int | None = None
    locs: tuple[Loc, ...] = ()

    @property
    def who(self) -> int | None:
        """The best rank identity for cross-file correlation."""
        for r in (self.global_rank, self.path_rank, self.rank):
            if r is not None:
                return r
        return None


class VerdictKind(str, Enum):
    """The verdict classes, in the JSON contract's spelling."""

    LAGGING_RANK = "lagging_rank"
    COLLECTIVE_MISMATCH = "collective_mismatch"
    RANK_FAILED_FIRST = "rank_failed_first"
    ALL_RANKS_STUCK = "all_ranks_stuck"
    WATCHDOG_STUCK = "watchdog_stuck"
    NO_FAILURE = "no_failure"


@dataclass(frozen=True)
class Verdict:
    """The answer: what went wrong, who caused it, who was only waiting."""

    kind: VerdictKind
    summary: str
    culprit_ranks: tuple[int, ...] = ()
    waiting_ranks: tuple[int, ...] = ()
    pg: PG | None = None
    seq: int | None = None
    findings: tuple[Finding, ...] = ()
    next_steps: tuple[str, ...] = ()


@dataclass(frozen=True)
class RankRow:
    """One rank's state for the report table."""

    rank: int
    state: str
    record: Record | None
    first_error: RankError | None
    files: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class Analysis:
    """The whole result of ``analyze-log``."""

    scans: tuple[FileScan, ...]
    records: tuple[Record, ...]
    verdict: Verdict
    rows: tuple[RankRow, ...]
    dtype: str
    flight_recorder: tuple[FrResult, ...] = ()

