"""A launcher that started this node's processes alone: on a job meant to span nodes, each node trained by itself.

DeepSpeed's runner without a hostfile launches on local resources only (evidence/formats/dsrunner.py): the store
on 127.0.0.1, the world this node's GPUs. The line is no failure and the verdict stays as the rules decided it; the
finding says what the runner did, and the step how a multi-node job is started instead (deepspeed/launcher/
runner.py: the hostfile and a multi-node launcher from the first node, or --no_ssh and --node_rank on each node;
accelerate's --deepspeed_multinode_launcher).
"""

from __future__ import annotations

from ncclcheck.findings import Finding, Severity
from ncclcheck.job.model import Job, VerdictKind

STEP = (
    "If this job was to span several nodes: DeepSpeed's runner found no hostfile, so each node's runner launched its "
    "own GPUs alone (its store on 127.0.0.1, a world of that node only) and every node trained by itself. Start the "
    "runner once, on the first node, with a hostfile that lists every node (`--hostfile FILE`, one `HOST slots=N` "
    "line each; /job/hostfile by default) and passwordless ssh from there to each (its multi-node launcher, pdsh by "
    "default, starts the others: `--launcher`); or start it on every node yourself with `--no_ssh --node_rank N "
    "--master_addr ADDR --master_port PORT` and the same hostfile. Under `accelerate launch` run on every machine, "
    "pass `--deepspeed_multinode_launcher standard` so that each machine starts its own processes into one job."
)


def local_only_findings(job: Job) -> list[Finding]:
    """What the runner said it did, where it said so."""
    said = job.facts.local_only
    if not said:
        return []
    return [Finding(Severity.INFO, "deepspeed-local-only",
                    "DeepSpeed's runner found no hostfile and launched on this node's GPUs only, as a job of one node "
                    "(deepspeed/launcher/runner.py: the store on 127.0.0.1, the world this node's GPUs).",
                    tuple(f.loc for f in said[:8]))]


# The verdicts a job whose nodes never met ends in: nothing failed (each node trained alone), a cut or unexplained
# end, or a launch or set-up that failed (a second runner's store on a port the first holds). A rank's own failure or
# a hang says why the job ended; the runner's line is then only its finding.
_NODES_NEVER_MET = frozenset({VerdictKind.NO_FAILURE, VerdictKind.INCOMPLETE, VerdictKind.LAUNCHER_FAILURE,
                              VerdictKind.SETUP_FAILURE})


def local_only_steps(job: Job, kind: VerdictKind) -> tuple[str, ...]:
    """How to start a multi-node job instead, where the runner launched on local resources only and the verdict is
    one a job whose nodes never met ends in."""
    return (STEP,) if kind in _NODES_NEVER_MET and job.facts.local_only else ()
