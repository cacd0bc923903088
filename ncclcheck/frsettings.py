"""The flight recorder's settings, said one way by every command: analyze-log's next steps, snapshot's advice and
probe --debug print the same names and values.

Both spellings are set because the installed torch decides which it reads: the ``TORCH_FR_*`` names are newer, the
``TORCH_NCCL_*`` ones are what torch before 2.8 reads (and what newer releases still accept).
"""

from __future__ import annotations

from collections.abc import Sequence

# (name, value, why)
SETTINGS: tuple[tuple[str, str, str], ...] = (
    ("TORCH_FR_BUFFER_SIZE", "2000", "flight recorder: keep the last 2000 collectives"),
    ("TORCH_NCCL_TRACE_BUFFER_SIZE", "2000", "the same for torch < 2.8"),
    ("TORCH_FR_DUMP_ON_TIMEOUT", "1", "write every rank's record when a collective times out"),
    ("TORCH_NCCL_DUMP_ON_TIMEOUT", "1", "the same for torch < 2.8"),
    ("TORCH_FR_DUMP_TEMP_FILE", "/tmp/nccl_trace_rank_", "where the dumps go (+ rank)"),
    ("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "/tmp/nccl_trace_rank_", "the same for torch < 2.8"),
)
# A named pipe per rank, which snapshot writes to for a dump of a live job.
PIPE = ("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "/tmp/nccl_pipe_", "a pipe per rank: snapshot asks a live job for dumps")


def export(extra: Sequence[tuple[str, str, str]] = ()) -> str:
    """One ``export`` line of every setting (and ``extra``), to paste before the job starts."""
    return "export " + " ".join(f"{name}={value}" for name, value, _ in (*SETTINGS, *extra))
