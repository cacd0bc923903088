"""A conclusion with its evidence and fix: shared by analyze-log's verdict and probe's lint."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ncclcheck.evidence.types import Loc


class Severity(str, Enum):
    """How much a finding matters."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Finding:
    """A conclusion with the lines that support it and what to do about it."""

    severity: Severity
    code: str
    message: str
    evidence: tuple[Loc | str, ...] = ()  # log lines, or settings and devices for probe findings
    fix: str | None = None
