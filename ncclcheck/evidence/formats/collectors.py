"""The labels collectors put before the lines they gather: srun -l's "3: ", pdsh's "worker-4: ", a CRI log's time
stamp, stream and tag, kubectl logs --prefix's "[pod/job-worker-1/pytorch] "; and the tag of a wrapper that carries a launcher's
workers' lines, Determined's "[rank=0] ".

Such a label says which node or task a line came from, not which rank: a node's label before torchrun's
"[default1]:" makes that tag the node's local rank (evidence/parse.py places it), and a launcher's report behind
a node's label is about that node's workers (evidence/formats/torchrun.py).

Determined's tag names the global rank. Its launchers run each worker under determined/launch/wrap_rank.py, given
the rank (torch_distributed.py and deepspeed.py: the ``RANK`` torchrun or DeepSpeed's launcher sets, the global rank;
horovod.py: ``HOROVOD_RANK,OMPI_COMM_WORLD_RANK,PMI_RANK``; tensorflow.py: the rank itself), which writes each line of
the worker as ``f"[rank={rank}] {line}"`` to the container's output. The master keeps that rank with the line (its log
shipper, master/static/srv/ship_logs.py, takes ``[rank=N]`` off into the record's rank) and prints a trial's or task's
log line as ``[<time>] <container> [rank=N] || <LEVEL>: <line>`` (master/pkg/model/task.go TaskLog.Message: the
container's first 8 characters or 8 spaces; experiment.go TrialLog.Resolve: ``[<time>] [<container>] [rank=N] || ``;
the Postgres query of postgres_trial_logs.go: ``[UNKNOWN CONTAINER]``, ``[UNKNOWN TIME]`` where either is missing).
Both are taken off a line here (``PREFIXES``: the worker's tag, and the master's header in every release's form,
``MASTER``, with 0.12-0.13's older ``[<time>] <container> [<STATE>] || ``); neither's rank is read (below).

A container's log file on a Kubernetes node is in the CRI logging format (the kubelet's CRI logging design; kubelet
pkg/kubelet/kuberuntime/logs/logs.go parseCRILog): each line is ``<time> <stream> <tags> <line>``, the time an
RFC3339Nano stamp (``Z`` or an offset), the stream ``stdout`` or ``stderr``, the tags ``:``-separated with ``P``
(a partial line, the runtime split it) or ``F`` (full) first; ``kubectl logs --timestamps`` prints the stamp alone
before the line. Either is a label here: the line after it is the process's own, its indentation kept.
"""

from __future__ import annotations

import re

# A CRI log's stamp, stream and tags, or kubectl logs --timestamps' stamp alone; kubectl logs --prefix's pod; a node's
# or a task's name (pdsh, srun -l): each with the one space after it.
_STAMP = r"\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:\d\d) (?:std(?:out|err) [PF](?::[^\s:]+)* )?"
_POD = r"\[pod/[^\]\s]+\] "
_NODE = r"[\w.@-]{1,64}: "
# A collector's label before a line that has no rank tag (a node's name only before the line's first word).
LABEL = re.compile(rf"^(?:{_STAMP}|{_POD}|{_NODE}(?=\S))")
# The labels, each before a line's own indentation (a block's indented rows: formats/elastic.py's failure table).
MARGIN = f"{_STAMP}|{_POD}|{_NODE}"
# The wrappers' tags, taken off a line's start with the sources' (evidence/whose.py, ``formats.PREFIXES``).
# Determined's names the global rank (the module's docstring), but is not read as one: the one corpus case of it
# (tests/data/public_threads/61, a set-up failure every rank meets, no culprit in its truth) would then name rank 0,
# as torchrun's "[rank0]:" names it for the same line; whether such a failure names the rank that printed it is a
# rule's question (job/rules.py), not this tag's.
# The master's header before each line of a task's log (the module's docstring), every release's form, taken off with
# them: "[<time>] <container> [<STATE>] || " (0.12-0.13: ContainerLog.String, "[%s] %s [%s] || %s", the container's
# state ASSIGNED ... TERMINATED), "[<time>] <container> [rank=N] || <LEVEL>: " (0.13.8 on: the Postgres query, and
# TaskLog.Message, 8 spaces for no container), "[<time>] [<container>] [rank=N] || <LEVEL>: " (TrialLog.Resolve),
# "[UNKNOWN TIME]", "[UNKNOWN CONTAINER]" where either is missing; the level is the master's record's, not the line's
# (TrialLog.Resolve's "%s|| %s %s" leaves two spaces where it has none).
MASTER = re.compile(r"\[(?:\d{4}-\d\d-\d\dT[\d:.]{8,20}(?:Z|[+-]\d\d:\d\d)|UNKNOWN TIME)\] (?:\[[\w .-]{1,40}\]|[\w.-]{1,8}| {8})"
                    r"(?: \[(?:ASSIGNED|PULLING|STARTING|RUNNING|TERMINATED)\])?(?: \[rank=\d{1,7}\])? \|\|"
                    r"(?: (?:TRACE|DEBUG|INFO|WARNING|ERROR|CRITICAL):)? {0,2}")
PREFIXES = (re.compile(r"\[rank=\d+\]"), MASTER)
# A node's label before torchrun's "[default1]:" (pdsh's "node1: ", srun -l's "0: "), not a per-line stamp.
NODE_LABEL = re.compile(r"^[\w.@-]{1,64}: (?=\[)")


def node_label(text: str) -> str | None:
    """The label a collector put before this line where it names a node (pdsh's "node1: "), not a stamp or a pod."""
    label = LABEL.match(text)
    return label[0] if label and label[0][:1] != "[" and label[0][-2:] == ": " else None
