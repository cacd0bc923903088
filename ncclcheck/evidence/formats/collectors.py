"""The labels collectors put before the lines they gather: srun -l's "3: ", pdsh's "worker-4: ", a CRI log's time
stamp, kubectl logs --prefix's "[pod/job-worker-1/pytorch] "; and the tag of a wrapper that carries a launcher's
workers' lines, Determined's "[rank=0] " (determined/launch/wrap_rank.py prefixes each line of the worker it runs).

Such a label says which node or task a line came from, not which rank: a node's label before torchrun's
"[default1]:" makes that tag the node's local rank (evidence/parse.py places it), and a launcher's report behind
a node's label is about that node's workers (evidence/formats/torchrun.py).
"""

from __future__ import annotations

import re

# A collector's label before a line that has no rank tag.
LABEL = re.compile(r"^(?:\d{4}-\d\d-\d\dT[\d:.]+Z |\[pod/[^\]\s]+\] |[\w.@-]{1,64}: (?=\S))")
# The wrappers' tags, taken off a line's start with the sources' (evidence/whose.py, ``formats.PREFIXES``); the rank
# Determined's names is not read (no line says how its ranks map to the launcher's).
PREFIXES = (re.compile(r"\[rank=\d+\]"),)
# A node's label before torchrun's "[default1]:" (pdsh's "node1: ", srun -l's "0: "), not a per-line stamp.
NODE_LABEL = re.compile(r"^[\w.@-]{1,64}: (?=\[)")


def node_label(text: str) -> str | None:
    """The label a collector put before this line where it names a node (pdsh's "node1: "), not a stamp or a pod."""
    label = LABEL.match(text)
    return label[0] if label and label[0][:1] != "[" and label[0][-2:] == ": " else None
