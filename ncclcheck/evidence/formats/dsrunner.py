"""DeepSpeed's runner (the `deepspeed` command, deepspeed/launcher/runner.py): how many nodes it launched on.

The runner reads a hostfile (--hostfile, /job/hostfile by default) to learn the job's nodes. Without one it logs
"Unable to find hostfile, will proceed with training with local resources only." (fetch_hostfile), takes this
node's GPUs as the whole job (resource_pool = {'localhost': device_count}), sets the store's address to 127.0.0.1
and launches deepspeed.launcher.launch here only, with no multi-node launcher (pdsh, openmpi, mvapich, slurm): a job
of one node. That is right on one node. Where the job was to span several, the same command started on each node
(by hand, by accelerate's default multi-node launcher `pdsh` run on every machine, by a scheduler) makes each
node's runner train alone, a job of its own with its own rank 0: no error says so, the nodes never meet. The
multi-node runner is started once, on the first node, with a hostfile, and reaches the others over ssh; or each
node's runner is started with --no_ssh and its --node_rank (job/localonly.py words the steps).

Read: the warning, wherever a logger's head puts it (``[WARNING] [runner.py:196:fetch_hostfile] ...``), as one
``deepspeed_local_only`` fact.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

LOCAL_ONLY = re.compile(r"Unable to find hostfile, will proceed with training with local resources only")
ANYONE = Who()
_WORDS = ("Unable to find hostfile",)


class Runner:
    """One input's runner lines: the first that says it launched on local resources only."""

    def __init__(self) -> None:
        self._said = False

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if self._said or not LOCAL_ONLY.search(text):
            return ()
        self._said = True
        return (Fact(ANYONE, "deepspeed_local_only", "localhost", loc),)


FORMAT = Format(
    name="DeepSpeed runner",
    words=_WORDS,
    make=Runner,
    patterns=(LOCAL_ONLY,),
    samples=(
        Sample("[2023-12-18 10:00:00,000] [WARNING] [runner.py:196:fetch_hostfile] Unable to find hostfile, will "
               "proceed with training with local resources only.",
               "deepspeed/launcher/runner.py (fetch_hostfile: logger.warning(\"Unable to find hostfile, will proceed "
               "with training with local resources only.\")); the logger's head, deepspeed/utils/logging.py",
               (Fact(ANYONE, "deepspeed_local_only", "localhost", AT),)),
    ),
)
