"""The job's world as launchers, frameworks and programs echo it, and a program's word that its work is over.

The world's size is printed in many places besides NCCL's and ProcessGroupNCCL's own lines: an environment dump or a
script's print (``WORLD_SIZE=8``), DeepSpeed's launcher (``dist_world_size=16``) and its comm (``world_size=8``),
torchrun's agent's rendezvous result (``global_world_sizes=[8, 8, …]``) and launch configs (``max_nodes : 2``,
``nproc_per_node : 4``), its command line (``--nnodes=2``), Accelerate's state (``Num processes: 8``), torch 1.x's
store barrier. Accelerate's state names each process's index and device on lines of their own (``Process index:
3``, ``Device: cuda:0``; PartialState.__repr__ in src/accelerate/state.py; job/dupgpu.py). A program's own word that
its work is over ("Rank 3 completed", "rank=3 done", the HF Trainer's "Training completed. Do not forget …") and
ProcessGroupNCCL's destructor at interpreter exit (2.4+: its groups are being torn down) say a rank ended of itself;
its watchdog's "we are taking the entire process down" (ProcessGroupNCCL.cpp, after a work of the rank failed or
timed out, under TORCH_NCCL_ASYNC_ERROR_HANDLING's tear-down) says the rank ended of an NCCL failure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Read, Who

_DONE = re.compile(r"\b[Rr]ank[ =](?P<value>\d+):? (?:has )?(?:completed|finished|done)\b")
FACTS = (  # (key, a word the line must hold, pattern): the word is a cheap test before the pattern
    ("launcher_world", "WORLD_SIZE", re.compile(r"\bWORLD_SIZE['\"]?\s*[=:]\s*['\"]?(?P<value>\d+)")),
    ("launcher_world", "world_size",
     re.compile(r"(?<![\w.])(?:dist_)?world_size['\"]?\s*[=:]\s*['\"]?(?P<value>\d+)")),
    ("launcher_world", "global_world_sizes", re.compile(r"global_world_sizes=\[(?P<value>\d+)")),
    ("accelerate_world", "Num processes", re.compile(r"\bNum processes: (?P<value>\d+)")),
    ("accelerate_device", "Device: ", re.compile(r"^Device: (?P<value>[a-z]{3,5}:\d{1,3})\s*$")),
    ("accelerate_process", "Process index: ", re.compile(r"^Process index: (?P<value>\d{1,7})\s*$")),
    ("launcher_world", "store-based barrier", re.compile(r"store-based barrier for key:\S+ with (?P<value>\d+) nodes")),
    # torchrun's command line or its launch configs (LOGLEVEL=INFO): nodes times processes per node, when fixed.
    ("nnodes", "nnodes", re.compile(r"--nnodes[= ](?P<value>\d+)(?![:\d])")),
    ("nnodes", "max_nodes", re.compile(r"(?:^|\])\s*max_nodes\s*:\s*(?P<value>\d+)\s*$")),
    ("nproc_per_node", "nproc",
     re.compile(r"--nproc[-_]per[-_]node[= ](?P<value>\d+)|(?:^|\])\s*nproc_per_node\s*:\s*(?P<config>\d+)\s*$")),
    ("work_done", "completed", _DONE),
    ("work_done", "finished", _DONE),
    ("work_done", "done", _DONE),
    ("work_done", "Training completed", re.compile(r"(?P<value>Training completed)\. Do not forget")),
    # A line that is only the program's word that it is through ("finished", "Training finished."), as a script
    # prints last (tests/data/launchers/accelerate/clean); "done" alone is too often a step's (loading … done).
    ("work_done", "inished", re.compile(r"^(?P<value>(?:[Tt]raining )?[Ff]inished)[.!]?\s*$")),
    ("exit_without_destroy", "destroy_process_group",
     re.compile(r"(?P<value>destroy_process_group\(\) was not called before program exit)")),
    # The same warning as 2.4-2.5 worded it (ProcessGroupNCCL.cpp, ~ProcessGroupNCCL: "WARNING: process group has NOT been
    # destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call
    # destroy_process_group ...").
    ("exit_without_destroy", "NOT been destroyed",
     re.compile(r"(?P<value>process group has NOT been destroyed before we destruct ProcessGroupNCCL)")),
    # ProcessGroupNCCL's watchdog, once a work of its rank failed or timed out (its error handling tears down):
    # "Some NCCL operations have failed or timed out. ... we are taking the entire process down."
)
# Words one of which its lines hold (the assembler's cheap test before them).
FACT_WORDS = ("WORLD_SIZE", "world_size", "Num processes", "Device: ", "Process index: ", "store-based barrier", "nnodes",
              "max_nodes", "nproc", "destroy_process_group", "NOT been destroyed", "completed", "finished", "done",
              "entire process down", "inished")


def facts(who: Who, text: str, loc: Loc) -> list[Fact]:
    """The world's size, nodes and processes per node a line echoes; a rank's word that its work is over."""
    return [Fact(who, key, next(g for g in m.groups() if g is not None).strip(), loc) for key, word, pattern in FACTS
            if word in text and (m := pattern.search(text))]


_NOBODY = Who()


class Lines:
    """One input's lines about the world (each read on its own)."""

    def feed(self, text: str, loc: Loc) -> Iterable[Read]:
        return facts(_NOBODY, text, loc)


_DESTROY = ("[rank0]:[W1125 09:36:48.112233445 ProcessGroupNCCL.cpp:1250] Warning: WARNING: destroy_process_group() "
            "was not called before program exit, which can leak resources.")
_DS_WORLD = "[2026-11-25 15:26:27,967] [INFO] [launch.py:170:main] dist_world_size=4"
_BARRIER = ("[rank0]:I1128 13:24:58.482000 12594 torch/distributed/distributed_c10d.py:1087] Rank 0: Completed "
            "store-based barrier for key:store_based_barrier_key:0 with 3 nodes.")
_TORCHRUN_ARGS = 'TR="$PY -m torch.distributed.run --nnodes 1 --nproc-per-node 2 --tee 3"'
_MAX_NODES = "I1128 05:33:56.940000 25692 torch/distributed/launcher/api.py:254]   max_nodes                : 2"
_HF_DONE = "Training completed. Do not forget to share your model on huggingface.co/models =)"
FORMAT = Format(
    name="world",
    # "done" too: a rank's last words ("rank=3 done") stand at the end of its log, past any head (job/ending.py)
    words=("destroy_process_group", "NOT been destroyed", "Training completed", "entire process down", "done", "inished"),
    # the job's world as launchers and scripts echo it at start-up (torchrun's launch configs, Accelerate, DeepSpeed)
    head_words=("WORLD_SIZE", "world_size", "Num processes", "Device: ", "Process index: ", "nnodes", "nproc", "max_nodes",
                "store-based"),
    make=Lines,
    patterns=tuple(p for _, _, p in FACTS if p is not _DONE),
    logical=True,
    behind=(
        # a rank's word that its work is over, behind each word its row tests first
        Behind(("done", "finished", "completed"), (_DONE,)),
    ),
    samples=(
        Sample(_DESTROY, "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (2.4+): ~ProcessGroupNCCL's warning",
               (Fact(_NOBODY, "exit_without_destroy", "destroy_process_group() was not called before program exit",
                     AT),)),
        Sample("[rank1]:[W414 16:54:27.214824770 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been "
               "destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call "
               "destroy_process_group to ensure that any pending NCCL operations have finished in this process.",
               "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (2.4-2.5): ~ProcessGroupNCCL's warning as those "
               "releases worded it",
               (Fact(_NOBODY, "exit_without_destroy", "process group has NOT been destroyed before we destruct "
                                                      "ProcessGroupNCCL", AT),)),
        Sample("rank 0 of WORLD_SIZE=4, attempt 0",
               "tests/data/world/restart/logs/run/attempt_0/0/stdout.log:1",
               (Fact(_NOBODY, "launcher_world", "4", AT),)),
        Sample(_DS_WORLD,
               "tests/data/launchers/deepspeed/clean/console.log:8",
               (Fact(_NOBODY, "launcher_world", "4", AT),)),
        Sample("  global_world_sizes=[4, 4]",
               "tests/data/public_threads/70-pytorch-116974-slurm-rendezvous-closed.log:20",
               (Fact(_NOBODY, "launcher_world", "4", AT),)),
        Sample("Num processes: 4",
               "tests/data/launchers/accelerate/clean/console.log:2",
               (Fact(_NOBODY, "accelerate_world", "4", AT),)),
        Sample("Device: cpu:0",
               "tests/data/launchers/accelerate/clean/console.log:5",
               (Fact(_NOBODY, "accelerate_device", "cpu:0", AT),)),
        Sample("Process index: 0",
               "tests/data/launchers/accelerate/clean/console.log:3",
               (Fact(_NOBODY, "accelerate_process", "0", AT),)),
        Sample(_BARRIER,
               "tests/data/launchers/torchrun/store_barrier_console/console.log:17",
               (Fact(_NOBODY, "launcher_world", "3", AT),)),
        Sample(_TORCHRUN_ARGS,
               "tests/data/gpu/make/run.sh:25 (a command line as its script echoes it)",
               (Fact(_NOBODY, "nnodes", "1", AT), Fact(_NOBODY, "nproc_per_node", "2", AT))),
        Sample(_MAX_NODES,
               "tests/data/launchers/torchrun/rdzv_closed/node0.console.log:5",
               (Fact(_NOBODY, "nnodes", "2", AT),)),
        Sample(_HF_DONE,
               "transformers/trainer.py: the Trainer's log line at the end of train()",
               (Fact(_NOBODY, "work_done", "Training completed", AT),)),
        Sample("finished",
               "tests/data/launchers/accelerate/clean/console.log:15",
               (Fact(_NOBODY, "work_done", "finished", AT),)),
    ),
)
