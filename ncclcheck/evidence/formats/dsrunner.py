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

Without --master_addr the multi-node runner takes the first address `hostname -I` prints on the first host and logs
"Using IP address of ADDR for node HOST" (main); it then passes ``--master_addr=ADDR`` to every node's
deepspeed.launcher.launch in the command it logs as ``cmd = ...``. Where that command printed nothing (no address,
a container without the tool, before the runner checked it: microsoft/DeepSpeed#2631) both lines show the address
empty, and every node's workers are given no store to meet at: the runner's own words of a launch that cannot work,
read as a ``runner`` clue of the line (job/reasons.py; its meaning: job/statements.toml's runner_no_master_addr).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Clue, Fact, Loc, Said, Who

LOCAL_ONLY = re.compile(r"Unable to find hostfile, will proceed with training with local resources only")
# The address left empty: two spaces where it stands, or the option's value empty before the next argument.
NO_ADDRESS = re.compile(r"Using IP address of  for node (?P<host>\S{1,255})|cmd = .{0,4000}? (?P<empty>--master_addr=)(?: |$)")
ANYONE = Who()
_WORDS = ("Unable to find hostfile", "Using IP address of ", "--master_addr=")


class Runner:
    """One input's runner lines: the first that says it launched on local resources only."""

    def __init__(self) -> None:
        self._said = False

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "--master_addr=" in text or "Using IP address of " in text:
            m = NO_ADDRESS.search(text)
            if m is None:
                return ()
            # the line's own words: the echo, or the command from its empty option on (its head is the node list)
            said = m[0] if m["host"] else text[m.start("empty"):][:200].rstrip()
            return (Clue(ANYONE, "runner", said, loc),)
        if self._said or not LOCAL_ONLY.search(text):
            return ()
        self._said = True
        return (Fact(ANYONE, "deepspeed_local_only", "localhost", loc),)


FORMAT = Format(
    name="DeepSpeed runner",
    words=_WORDS,
    make=Runner,
    patterns=(LOCAL_ONLY, NO_ADDRESS),
    samples=(
        Sample("[2023-12-18 10:00:00,000] [WARNING] [runner.py:196:fetch_hostfile] Unable to find hostfile, will "
               "proceed with training with local resources only.",
               "deepspeed/launcher/runner.py (fetch_hostfile: logger.warning(\"Unable to find hostfile, will proceed "
               "with training with local resources only.\")); the logger's head, deepspeed/utils/logging.py",
               (Fact(ANYONE, "deepspeed_local_only", "localhost", AT),)),
        Sample("[2022-12-15 21:00:19,543] [INFO] [runner.py:417:main] Using IP address of  for node worker-0",
               "deepspeed/launcher/runner.py (main: logger.info(f\"Using IP address of {args.master_addr} for node "
               "{first_host}\")), with `hostname -I` printing nothing (microsoft/DeepSpeed#2612)",
               (Clue(ANYONE, "runner", "Using IP address of  for node worker-0", AT),)),
        Sample("[2022-12-15 21:00:19,545] [INFO] [runner.py:508:main] cmd = pdsh -S -f 1024 -w a,b export PYTHONPATH=/; "
               " cd /; /usr/bin/python -u -m deepspeed.launcher.launch --world_info=e30= --node_rank=%n "
               "--master_addr= --master_port=29500 train.py",
               "deepspeed/launcher/multinode_runner.py (PDSHRunner.get_cmd: --master_addr={args.master_addr}), "
               "logged by runner.py main as cmd = ...",
               (Clue(ANYONE, "runner", "--master_addr= --master_port=29500 train.py", AT),)),
    ),
)
