"""Workers that exited with a status and left no line of their own: where their error is, and what exit 1 most often is.

torchrun's failure table (torch/distributed/elastic/multiprocessing/errors: ChildFailedError's summary) records each
failed worker's exit code; its error file (``error_file: <N/A>``) and traceback are filled only where the worker's
entry point is wrapped in torch.distributed.elastic's ``@record``, which writes the exception to that file. Without it
the table says that the workers exited, not why: their exception went to their own stderr, printed above the table.
A status of 1 is CPython's for an uncaught exception (and sys.exit(1)), so it says nothing of which. Where the inputs
hold no error line of any process, the step says where the error is and the usual exceptions of a training start,
out of memory first (a larger model, batch or sequence than the GPUs hold); several workers failing alike at once is
the same error on each, not several culprits that differ. (https://pytorch.org/docs/stable/elastic/errors.html)
"""

from __future__ import annotations

from ncclcheck.job.model import Job
from ncclcheck.job.reasons import FAILED
from ncclcheck.ranks import rank_phrase

STEP = ("No line of these inputs holds the workers' own error: the launcher reports only that {who} exited with "
        "status {codes} (torchrun's table fills its error_file and traceback only where the worker's main is wrapped in "
        "torch.distributed.elastic's @record). Their exception is in their own output, printed above the launcher's "
        "report: bring the console from its start, or per-rank logs (torchrun --log-dir DIR --redirects 3 --tee 3).")
ONE = (" Status 1 is Python's for an uncaught exception, most often CUDA out of memory (lower the batch size, the "
       "sequence length or the model's size, or use more GPUs), then a missing file, module or argument.")


def exit_only_step(job: Job, culprits: tuple[int, ...]) -> str | None:
    """The step where every culprit is known only by the exit status a launcher's table gives it, or None."""
    if not culprits or any(x.source in FAILED for x in job.facts.stated):
        return None
    codes = {f.rank: f.exitcode for f in job.facts.elastic
             if f.rank is not None and f.exitcode is not None and not f.agent_line}
    if any(codes.get(r, 0) <= 0 for r in culprits):
        return None
    statuses = sorted({codes[r] for r in culprits})
    return STEP.format(who=rank_phrase(culprits), codes=" and ".join(str(c) for c in statuses)) + (
        ONE if statuses == [1] else "")
