"""NCCL's set-up as its INFO lines and nccl-tests print it: how far a job got before its first collective.

A job that stops with no error is read by where its lines stop (job/stall.py); these are the lines that place it.

* ``comm 0x… rank R nranks N … - Init COMPLETE``: ncclCommInitRank's last line on each rank (NVIDIA/nccl
  src/init.cc, every release since 2.4): that rank's communicator is set up.
* ``Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read`` (``Ring 00 : …`` before 2.7): a connection of that rank to a
  peer and the transport it took, P2P, SHM, NET or CollNet (src/transport.cc ``ncclTransportP2pSetup``); since
  2.22 the ring and tree connections are made by the first collective that needs them (NCCL_RUNTIME_CONNECT), so
  these lines may follow Init COMPLETE. ``Connected all rings`` / ``trees`` close that step.
* ``… - Destroy COMPLETE`` / ``Abort COMPLETE`` (ncclCommDestroy, ncclCommAbort): the communicator is torn down, the
  job's end, not its set-up (an ``nccl_end`` fact of its own: teardown lines follow it).
* nccl-tests (src/util.cu, 2.19.6 in /work/shared/reference): ``# Using devices`` and one ``#  Rank  0 … Pid … on
  host device 0 [0x..] <GPU>`` row per rank before the communicators are made; the result table's header (``# size
  count type redop root …`` and its units, ``# (B) (elements) …``) after they are; ``# Avg bus bandwidth`` after the
  last size. A result row is numbers only, with no word to find it by: job/stall.py counts the lines after the
  header instead.

* PyTorch's c10d store client (torch/csrc/distributed/c10d/socket.cpp, at TORCH_CPP_LOG_LEVEL=INFO or
  TORCH_DISTRIBUTED_DEBUG=DETAIL): ``The client socket has connected to [host]:port on [host]:port.``, the TCP
  connection to the rendezvous store made, before any process group or NCCL communicator.

Every other ``NCCL INFO`` line of an input's head (bootstrap, topology, affinity, tuning) is a step of the set-up
too. Each yields one ``setup`` fact, the kind of step as its value; the parser keeps the latest of each process
(evidence/parse.py), which says where its lines stop. A completed communicator and each transport are ``nccl_ready``
and ``nccl_via`` facts (the first of each; a connection's as its rank and whole path, ``0 SHM/direct/direct``:
job/channels.py names the paths the channels took).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

READY = re.compile(r"rank (?P<rank>\d+) nranks (?P<n>\d+) .*Init COMPLETE")
CONNECT = re.compile(r"(?:Channel|Ring) \d+(?:/\d+)? ?: ?(?P<src>\d+)\[\d+\] ?-> ?\d+\[\d+\].{0,40}?"
                     r"(?P<via>via P2P|via SHM|via NET|via CollNet)\b(?P<path>/[\w/.:-]{0,60})?")
TESTS_HEADER = re.compile(r"#\s+size\s+count\s+type\s+redop")
TESTS_UNITS = re.compile(r"#\s+\(B\)\s+\(elements\)")  # the header's second line, the units
TESTS_DEVICE = re.compile(r"#\s+Rank\s+\d+ (?:Group\s+\d+ )?Pid\s+\d+ on\s+\S+ device\s+\d+")
# The kinds of step, in the ``setup`` fact's value.
READY_STEP, CONNECT_STEP, INFO_STEP, TESTS_STEP, HEADER_STEP, END_STEP, STORE_STEP = (
    "Init COMPLETE", "connection", "NCCL INFO", "nccl-tests devices", "nccl-tests header", "end", "store connected")
# The facts that place a process's lines (not said in the JSON's events: the verdict cites the lines it reads).
MARKS = frozenset({"setup", "nccl_ready", "nccl_via", "nccl_end"})
_END = ("Destroy COMPLETE", "Abort COMPLETE", "Avg bus bandwidth", "Out of bounds values")
_VIA = ("via P2P", "via SHM", "via NET", "via CollNet")
_ANYONE = Who()  # the line's process: the parser puts the fact on it


def step(text: str) -> str | None:
    """Which step of the set-up (or its end) a line is, or None."""
    if any(map(text.__contains__, _END)):
        return END_STEP
    if "Init COMPLETE" in text:
        return READY_STEP
    if any(map(text.__contains__, _VIA)) or "Connected all" in text:
        return CONNECT_STEP
    if "redop" in text and TESTS_HEADER.search(text) or "(elements)" in text and TESTS_UNITS.search(text):
        return HEADER_STEP
    if "Using devices" in text or " Pid " in text and TESTS_DEVICE.search(text):
        return TESTS_STEP
    if "NCCL INFO" in text:
        # a traced collective (formats/colltrace.py) is a call the job made once set up, not a step of the set-up
        return None if "opCount " in text else INFO_STEP
    if "client socket has connected" in text:
        return STORE_STEP
    return None


class Lines:
    """One input's set-up lines, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        kind = step(text)
        if kind is None:
            return ()
        said = [Fact(_ANYONE, "setup", kind, loc)]
        if kind == END_STEP:  # kept on its own: the latest ``setup`` fact may be a teardown line after it
            said.append(Fact(_ANYONE, "nccl_end", next(w for w in _END if w in text), loc))
        if kind == READY_STEP and (m := READY.search(text)):
            said.append(Fact(_ANYONE, "nccl_ready", f"{m['rank']}/{m['n']}", loc))
        elif kind == CONNECT_STEP and (m := CONNECT.search(text)):
            said.append(Fact(_ANYONE, "nccl_via", f"{m['src']} {m['via'][4:]}{m['path'] or ''}", loc))
        return said


_T72 = "tests/data/public_threads/72-vllm-9920-tp2-stalls-first-generate.log"
_T62 = "tests/data/public_threads/62-pytorch-81704-kubeflow-init-hang.log"
_T75 = "tests/data/public_threads/75-nccl-257-allreduce-perf-hangs-4-gpus.log"
FORMAT = Format(
    name="NCCL set-up",
    words=(*_END, "redop", "(elements)", "client socket has connected"),
    # Its other set-up lines come at the start: read in the head of an input (and wherever another word keeps them).
    # The connection and Init COMPLETE lines too: NCCL prints one a channel and peer, and one a communicator and rank,
    # the bulk of an NCCL_DEBUG=INFO log's chatter; kept anywhere they made the reader 18-30x slower than grep on the
    # chatty corpus (docs/benchmarks.md). So a stall is read where the set-up lines stand in an input's head (a short
    # log, or a job's first communicator); past it, a log that stops is not called a stall (never a false one).
    head_words=("NCCL INFO", "Using devices", " Pid ", "Init COMPLETE", *_VIA, "Connected all"),
    make=Lines,
    patterns=(READY, CONNECT, TESTS_HEADER, TESTS_UNITS),
    behind=(
        # nccl-tests' device lines, by their ``Pid`` (head word)
        Behind((" Pid ",), (TESTS_DEVICE,)),
    ),
    samples=(
        Sample("HP-Z8-Fury-G5-Workstation-Desktop-PC:23458:23665 [0] NCCL INFO comm 0x23ba7ea0 rank 0 nranks 2 cudaDev 0 "
               "nvmlDev 0 busId 47000 commId 0x47dc53f08cbcda96 - Init COMPLETE", f"{_T72}:1",
               (Fact(_ANYONE, "setup", READY_STEP, AT), Fact(_ANYONE, "nccl_ready", "0/2", AT))),
        Sample("HP-Z8-Fury-G5-Workstation-Desktop-PC:23541:23673 [1] NCCL INFO Channel 00 : 1[1] -> 0[0] via "
               "SHM/direct/direct", f"{_T72}:2",
               (Fact(_ANYONE, "setup", CONNECT_STEP, AT), Fact(_ANYONE, "nccl_via", "1 SHM/direct/direct", AT))),
        Sample("node1:2094:2160 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA",
               "NVIDIA/nccl src/transport/net.cc (2.19): a send connection over InfiniBand with GPUDirect RDMA",
               (Fact(_ANYONE, "setup", CONNECT_STEP, AT), Fact(_ANYONE, "nccl_via", "0 NET/IB/0/GDRDMA", AT))),
        Sample("node1:2094:2163 [0] NCCL INFO Connected all rings", "NVIDIA/nccl src/init.cc (2.18)",
               (Fact(_ANYONE, "setup", CONNECT_STEP, AT),)),
        Sample("jupyter-vmarkovtsev:15833:15833 [1] NCCL INFO Setting affinity for GPU 1 to ff00ff", f"{_T75}:17",
               (Fact(_ANYONE, "setup", INFO_STEP, AT),)),
        Sample("#   Rank  0 Pid  15833 on jupyter-vmarkovtsev device  0 [0x02] GeForce GTX 1080 Ti", f"{_T75}:5",
               (Fact(_ANYONE, "setup", TESTS_STEP, AT),)),
        Sample("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
               "busbw #wrong", "nccl-tests src/util.cu writeResultHeader (2.19.6)",
               (Fact(_ANYONE, "setup", HEADER_STEP, AT),)),
        Sample("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
               "(GB/s)", "nccl-tests src/util.cu writeResultHeader (2.19.6)", (Fact(_ANYONE, "setup", HEADER_STEP, AT),)),
        Sample("# Avg bus bandwidth    : 1.5", "nccl-tests src/util.cu writeResultFooter (2.19.6)",
               (Fact(_ANYONE, "setup", END_STEP, AT), Fact(_ANYONE, "nccl_end", "Avg bus bandwidth", AT))),
        Sample("[I socket.cpp:725] [c10d] The client socket has connected to [10-1-0-200.pytorch-simple-master-0."
               "kubeflow.svc.cluster.local]:23456 on [pytorch-simple-worker-0]:38250.", f"{_T62}:11",
               (Fact(_ANYONE, "setup", STORE_STEP, AT),)),
        Sample("node1:2094:2094 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 busId 1b000 - Destroy COMPLETE",
               "NVIDIA/nccl src/init.cc ncclCommDestroy (2.18)",
               (Fact(_ANYONE, "setup", END_STEP, AT),
                Fact(_ANYONE, "nccl_end", "Destroy COMPLETE", AT))),
    ),
)
