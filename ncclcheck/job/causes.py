"""The failure catalogue: what a line says about why a job died, and the fix people confirmed.

Each cause is matched on what the ranks and the launcher printed themselves (error lines, NCCL's
``Last error:`` text, NCCL WARN lines, CUDA assertions, store and launcher lines), never on the
cascade the other ranks print afterwards.  The patterns name the mechanism (a shared-memory segment
that cannot grow, a socket that cannot reach the store), not one file's wording, so a failure
worded differently by another release still lands in its class.  The catalogue is ordered: a
device or memory error is the root of the NCCL and store errors it causes, a set-up error comes
before the timeouts that follow it, and a lost peer is the consequence of something else.
docs/failures.md lists every cause with its lines, its fix and the public thread that confirmed it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ncclcheck.evidence import formats, stamps
from ncclcheck.evidence.linear import then
from ncclcheck.evidence.types import ErrorKind, FileScan, Loc, SystemEvent
from ncclcheck.job.hosts import Joined, join_events, peers_lost
from ncclcheck.job.xids import fatal, meaning
from ncclcheck.ranks import rank_phrase

SETUP = "setup"  # the communicator or the host: nothing ran yet, or NCCL could not build a transport
NETWORK = "network"  # a transport failed or a peer vanished while the job ran
LAUNCHER = "launcher"  # rendezvous, store and launcher: no rank is the culprit
DEVICE = "device"  # a CUDA error on one rank's GPU
MEMORY = "memory"  # GPU or host memory
PROGRAM = "program"  # the ranks' own calls disagree: different collectives, sizes or settings
HOST = "host"  # the host or the scheduler ended the ranks on a node
LATE = "late"  # ranks waited for one rank to reach NCCL's set-up: that rank was slow, stuck or dead
NCCL_DEBUG_RERUN = "NCCL_DEBUG=WARN (or NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV for the whole set-up)"
PROBE = "Run `ncclcheck probe` inside the failing container on each node: it checks this setting and says what to set."


@dataclass(frozen=True)
class Cause:
    """One class of failure: how to recognise it, why it happens, how to fix it, where that was confirmed."""

    kind: str
    family: str
    title: str
    pattern: re.Pattern[str]
    why: str
    fix: tuple[str, ...]
    source: str
    probe: bool = False


@dataclass(frozen=True)
class Diagnosis:
    """A cause found in the inputs: the ranks whose own lines show it, and the line that says it best."""

    cause: Cause
    ranks: tuple[int, ...]
    text: str
    loc: Loc
    locs: tuple[Loc, ...]
    detail: str  # one line, in the inputs' own numbers (the OOM's sizes, the assert's kernel)
    clock_s: float | None = None  # the earliest stamp (date and time) a line of it was printed, when lines carry one


def _c(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# Read two ways: the versions the ranks print differ (see _versions), or one rank's NCCL read another's set-up
# record as an address of no family: ncclSocketInit refuses an address that is neither AF_INET nor AF_INET6, and
# an address NCCL received (the unique id, a peer's bootstrap record) has family 0 when the sender's NCCL laid the
# record out differently. A local interface is never family 0: NCCL only lists AF_INET and AF_INET6 ones.
VERSIONS = Cause(
    "nccl_version_mismatch", SETUP, "ranks load different NCCL versions",
    _c(r"connecting to address.{0,80}with family 0 is neither AF_INET"),
    "the ranks run different NCCL versions (nodes with different images or environments), and NCCL's set-up "
    "records differ between versions: a rank reads the address another sent with no address family (family 0), "
    "or the ranks print different versions",
    ("Run every node from the same image or environment; `python -c 'import torch; print(torch.cuda.nccl."
     "version())'` on each.",
     "A pip-installed nvidia-nccl-cu* package overrides the NCCL torch was built with: install the same version "
     "on every node (`pip list | grep nccl`)."),
    "https://github.com/NVIDIA/nccl/issues/1267")


CATALOGUE: tuple[Cause, ...] = (
    Cause("cuda_oom", MEMORY, "CUDA out of memory",
          _c(r"CUDA out of memory|OutOfMemoryError|Cuda failure 'out of memory'|CUBLAS_STATUS_ALLOC_FAILED"),
          "the rank asked its GPU for more memory than was free; it raised and left the others waiting",
          ("Lower the per-GPU batch or sequence length, or shard more (FSDP/ZeRO, activation checkpointing).",
           "If much memory is 'reserved by PyTorch but unallocated', set "
           "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (fragmentation).",
           "Check `nvidia-smi` for other processes on the same GPU (two ranks on one device, a leftover job)."),
          "https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf"),
    Cause("host_oom", MEMORY, "killed for host memory (the OOM killer)",
          _c(r"oom_kill event|OOM[ -]Kill|OOMKilled|task \d+: Out Of Memory|Out of memory: Kill(?:ed)? process|"
             r"Memory cgroup out of memory|oom-kill:|^Killed process \d+ \(|Exceeded job memory limit|"
             r"DataLoader worker \(pid[^)]{0,64}\) is killed by signal: Killed"),
          "the process's host memory (RAM, not the GPU's) went past what its node, container or job step may use, "
          "and the kernel's OOM killer ended it with SIGKILL: no traceback, and its peers wait or lose it",
          ("Ask for more memory (Slurm `--mem`/`--mem-per-gpu`, the pod's memory limit) or use less of it: fewer "
           "data-loader workers, less pinned memory and prefetching, load checkpoints shard by shard or with "
           "mmap=True.",
           "The scheduler's accounting shows the peak: `sacct -j JOBID --format=JobID,State,MaxRSS,ReqMem`; on the "
           "node, `dmesg -T | grep -i -E 'killed process|out of memory'` names the process."),
          "https://docs.kernel.org/admin-guide/cgroup-v2.html#memory"),
    Cause("device_assert", DEVICE, "CUDA device-side assert",
          _c(r"device-side assert|" + then(r"Assertion `", r"` failed", lazy=False)),
          "a kernel checked an index or a value on the GPU and stopped: most often an index past the end of an "
          "embedding (a token id >= vocab size) or a label >= the number of classes",
          ("Rerun with CUDA_LAUNCH_BLOCKING=1 to get the Python line of the failing kernel (CUDA errors are "
           "reported at a later call otherwise).",
           "Or run the same batch on the CPU: it raises a plain IndexError with the index and the size.",
           "Check the data on that rank: token ids against the embedding's size (tokenizer and model vocab), labels "
           "against num_classes, gather/scatter indices."),
          "https://github.com/pytorch/pytorch/issues/29966"),
    Cause("illegal_access", DEVICE, "CUDA illegal memory access",
          _c(r"illegal memory access|misaligned address|an illegal instruction|unspecified launch failure"),
          "a kernel touched memory it does not own (a custom or fused kernel, a wrong shape or stride, a library "
          "bug); the watchdog only reports it later",
          ("Rerun that rank with CUDA_LAUNCH_BLOCKING=1, or under `compute-sanitizer --tool memcheck`, to find the "
           "kernel.",
           "Try without custom/fused kernels (flash attention, Triton, custom all-reduce) to bisect.",
           "If it moves between runs and hosts, check `dmesg -T | grep -i xid` for a hardware fault."),
          "https://docs.nvidia.com/compute-sanitizer/ComputeSanitizer/index.html"),
    Cause("gpu_hardware", DEVICE, "GPU hardware fault",
          _c(r"uncorrectable ECC|ECC error|\bXid\b|GPU is lost|fallen off the bus|AER: Uncorrect"),
          "the GPU itself reported a fault (ECC, Xid, lost from the bus): no code change fixes it",
          ("On that host: `nvidia-smi -q -d ECC,PAGE_RETIREMENT` and `dmesg -T | grep -i xid`.",
           "Drain the node and rerun the job elsewhere; report the Xid code to the cluster's operators."),
          "https://docs.nvidia.com/deploy/xid-errors/index.html"),
    Cause("invalid_device", DEVICE, "a GPU index that does not exist",
          _c(r"invalid device ordinal"),
          "the process asked for a GPU by an index this host does not have: more processes per node than "
          "visible GPUs (--nproc-per-node against CUDA_VISIBLE_DEVICES), or a device index written into the code",
          ("Start as many processes per node as it has GPUs: `--nproc-per-node` equal to the count `nvidia-smi -L` "
           "(or CUDA_VISIBLE_DEVICES) gives.",
           "Select the device from the launcher's LOCAL_RANK (`torch.cuda.set_device(int(os.environ['LOCAL_RANK']))`),"
           " not from the global rank or a fixed number."),
          "https://pytorch.org/docs/stable/elastic/run.html"),
    Cause("nvls_fabric", SETUP, "NVLink SHARP (NVLS) could not be set up: the fabric manager's state",
          _c(then(r"nvls\.cc", r"Cuda failure|failed|error", lazy=False)),
          "NCCL's NVLink SHARP transport (transport/nvls.cc) binds multicast memory through the NVSwitches; CUDA "
          "refuses it ('invalid argument', 'unknown error', error 401) when nvidia-fabricmanager was restarted while "
          "processes held GPU resources and the GPUs were not reset after, or when an NVSwitch or the fabric is "
          "faulty. Nothing in the job is wrong",
          ("At once: NCCL_NVLS_ENABLE=0 (NCCL then uses NVLink without NVLS: the job runs, without NVLS's speed-up).",
           "Check the node: `nvidia-smi -q | grep -A 2 -i fabric` (every GPU's fabric State Completed, Status "
           "Success) and `systemctl status nvidia-fabricmanager` (active, no errors in `journalctl -u "
           "nvidia-fabricmanager`).",
           "Fix: with no process on the GPUs, stop nvidia-fabricmanager, reset the GPUs (`nvidia-smi -r`), start "
           "nvidia-fabricmanager again; or reboot the node. If it comes back, report the NVSwitch to the operators."),
          "https://github.com/NVIDIA/nccl/issues/976"),
    Cause("duplicate_gpu", SETUP, "two ranks on one GPU",
          _c(r"Duplicate GPU detected|both on CUDA device"),
          "two ranks of one communicator use the same GPU: each process must select its own device before NCCL "
          "is set up, and here two kept the same one (no set_device, a fixed device in the code, or "
          "CUDA_VISIBLE_DEVICES giving every process one same GPU)",
          ("Call `torch.cuda.set_device(int(os.environ['LOCAL_RANK']))` before init_process_group (or pass "
           "device_id=), and move tensors and the model to that device, not to `cuda:0` or a fixed index.",
           "Do not set CUDA_VISIBLE_DEVICES to one same GPU for every process of a node; start as many processes "
           "as the node has GPUs."),
          "https://pytorch.org/docs/stable/distributed.html"),
    Cause("shm_bus_error", SETUP, "SIGBUS in NCCL's shared memory (/dev/shm too small)",
          _c(r"Caught signal 7|SIGBUS|Bus error"),
          "NCCL's shared-memory segments in /dev/shm were created but the memory behind them ran out when "
          "first touched, and the process died of SIGBUS; a container's default /dev/shm is 64 MiB",
          ("Docker: `docker run --shm-size=16g …` or `--ipc=host`.",
           "Kubernetes: mount an emptyDir with `medium: Memory` at /dev/shm in the pod spec.",
           "A data loader's workers also use /dev/shm: the same fix applies when the bus error is outside NCCL."),
          "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html", probe=True),
    Cause("native_crash", DEVICE, "a crash in native code (segmentation fault)",
          _c(r"Segmentation fault|SIGSEGV|Caught signal 11 |Illegal instruction|SIGILL|SIGFPE|segfault at|"
             r"general protection fault"),
          "the process died of a fatal signal inside compiled code (a native extension, a CUDA or NCCL library, "
          "mismatched library versions, memory corruption): Python prints no traceback for it",
          ("Get the native stack: run with `python -X faulthandler` (or PYTHONFAULTHANDLER=1), or let it dump core "
           "(`ulimit -c unlimited`) and open the core with `gdb python core`.",
           "Check that torch, its CUDA and NCCL libraries and every native extension come from matching builds "
           "(`python -m torch.utils.collect_env`); an extension built against another torch crashes this way."),
          "https://github.com/pytorch/pytorch/issues/135486"),
    Cause("shm_exhausted", SETUP, "/dev/shm too small for NCCL",
          _c(then(r"/dev/shm|shared memory segment|posix_fallocate|ncclShmOpen|shm_open", r"No space left|failed|error",
               lazy=False) + r"|Error while creating shared memory"),
          "NCCL's shared-memory transport between the ranks of one node creates segments in /dev/shm; a "
          "container's default is 64 MiB, too small for a few GPUs",
          ("Docker: `docker run --shm-size=16g …` or `--ipc=host`.",
           "Kubernetes: mount an emptyDir with `medium: Memory` at /dev/shm in the pod spec.",
           "Only as a last resort NCCL_SHM_DISABLE=1 (slower intra-node traffic)."),
          "https://github.com/NVIDIA/nccl/issues/342", probe=True),
    VERSIONS,
    # Older NCCL created its socket for the address of the interface it found; with none found the address
    # has no family, and socket() fails with "Address family not supported by protocol" (nccl-tests#14).
    Cause("no_socket_interface", SETUP, "no usable network interface for NCCL",
          _c(r"no socket interface found|neither AF_INET|Socket creation failed\W{1,8}Address family not supported"),
          "NCCL found no interface matching NCCL_SOCKET_IFNAME (or none at all) to bootstrap over",
          ("Set NCCL_SOCKET_IFNAME to an interface that exists on every node (`ip -br addr`), or unset it to let "
           "NCCL pick; a prefix such as `^lo,docker` excludes instead of naming.",
           "Interface names may differ between nodes: list them all (`eth0,ens5`) or set it per node."),
          "https://github.com/NVIDIA/nccl/issues/286", probe=True),
    Cause("net_plugin", SETUP, "NCCL network plugin or transport not available",
          _c(r"Failed to initialize any NET plugin|Failed to initialize NET plugin"),
          "NCCL_NET (or a plugin in the image) asks for a transport this host cannot provide, e.g. NCCL_NET=IB "
          "without InfiniBand devices or without the plugin library",
          ("Unset NCCL_NET (NCCL then picks IB when it works, else sockets), or install the plugin the image "
           "expects (libnccl-net.so, aws-ofi-nccl).",
           "Check the HCAs: `ibv_devinfo`; NCCL_IB_HCA must name devices that exist."),
          "https://github.com/NVIDIA/nccl/issues/952", probe=True),
    Cause("gloo_unreachable", SETUP, "Gloo could not connect its ranks",
          # "Connection refused" is a peer that listens nowhere (gone, or an earlier attempt's address in the
          # store), not an interface the other node cannot reach.
          _c(r"connectFullMesh failed(?![^\n]*Connection refused)"),
          "creating a Gloo process group (the backend of CPU collectives, and the group vLLM, SGLang and DeepSpeed "
          "create beside NCCL) connects a TCP pair between every two ranks, each over the address of the interface "
          "Gloo picked from the host name; on nodes with several interfaces that address may not be reachable from "
          "the other node, and the connection fails",
          ("Set GLOO_SOCKET_IFNAME to the interface the nodes reach each other on (`ip -br addr`; the one of "
           "MASTER_ADDR), on every node, as NCCL_SOCKET_IFNAME is for NCCL.",
           "Check that the host name resolves to that interface's address on each node (`getent hosts $(hostname)`)."),
          "https://pytorch.org/docs/stable/distributed.html#choosing-the-network-interface-to-use"),
    Cause("ib_error", NETWORK, "InfiniBand/RoCE transport error",
          _c(then(r"NET/IB", r"completion|error", lazy=False)
             + r"|ibv_\w{1,40} failed|Got completion from peer"),
          "the NIC gave up on a transfer with the named peer: a completion error of the RDMA transport, not a "
          "timeout. Status 12 (transport retry counter exceeded, often with vendor err 129) means the peer never "
          "acknowledged: the peer's process or host is gone, or the path between the two (a link, a switch port, a "
          "cable, RoCE's GID index or traffic class) dropped the packets",
          ("Check the link on both hosts: `ibstat` or `ibv_devinfo` (State Active, Physical state LinkUp) and the "
           "port's error counters (`perfquery`; `ethtool -S` on RoCE); run nccl-tests' all_reduce_perf across the "
           "same two nodes.",
           "On RoCE, NCCL_IB_GID_INDEX must name the RoCE v2 address on every node (`show_gids`) and NCCL_IB_TC the "
           "fabric's lossless class; NCCL_IB_TIMEOUT raises the retry window on a congested fabric.",
           "Where a host has ports that are down or on another fabric, name the ones NCCL may use: NCCL_IB_HCA "
           "(e.g. `=mlx5_0,mlx5_1`)."),
          "https://github.com/NVIDIA/nccl/issues/1405", probe=True),
    Cause("p2p_unsupported", SETUP, "GPU peer-to-peer path broken (ACS/IOMMU)",
          _c(r"peer access is not supported|peer mapping resources exhausted|cuIpc\w{0,40} failed|"
             + then(r"P2P", r"not supported", lazy=False)),
          "PCIe ACS or the IOMMU routes GPU-to-GPU traffic through the CPU or blocks it; NCCL's P2P transport "
          "then fails or hangs",
          ("Confirm with NCCL_P2P_DISABLE=1 once (it should then work, slower).",
           "Fix the host: disable ACS in the BIOS or with setpci, or boot with iommu=pt; `nvidia-smi topo -m` "
           "shows the path."),
          "https://github.com/NVIDIA/nccl/issues/631", probe=True),
    Cause("port_in_use", LAUNCHER, "the store's port is already in use",
          _c(r"EADDRINUSE|Address already in use|failed to listen on any local network address"),
          "another job (or a leftover process) holds MASTER_PORT / the rendezvous port on this host",
          ("Pick another port (MASTER_PORT, --rdzv-endpoint host:PORT) or let torchrun choose one: "
           "`--rdzv-endpoint localhost:0` or `--standalone` on one node.",
           "Find the holder: `ss -ltnp | grep PORT`.",
           "If no other process holds it, the job was started twice: a script that starts its own workers "
           "(mp.spawn, a fixed MASTER_PORT) launched under torchrun, or two launchers, binds the port once per "
           "launch; start it one way only (`python script.py` or torchrun, not both)."),
          "https://pytorch.org/docs/stable/elastic/run.html#stacked-single-node-multi-worker"),
    Cause("host_unresolvable", LAUNCHER, "the store's host name does not resolve",
          _c(r"^(?!.*\((?:localhost|127\.0\.0\.1|::1), \d+\) cannot be retrieved)"
             r".*(?:host not found|Name or service not known|Temporary failure in name resolution|"
             r"nodename nor servname|Unable to find address for|gai error: -[23]\b|cannot be retrieved)"),
          "MASTER_ADDR (or the --rdzv-endpoint host) is a name this node cannot resolve: a typo, a name known "
          "only on the head node, or a container without the cluster's DNS",
          ("Check on each node: `getent hosts $MASTER_ADDR`; use an IP address or a name every node resolves.",
           "Under Slurm set MASTER_ADDR from `scontrol show hostnames $SLURM_JOB_NODELIST | head -n1`, on the "
           "node that runs rank 0."),
          "https://github.com/pytorch/examples/issues/540"),
    Cause("clients_missing", LAUNCHER, "ranks never reached the store",
          _c(r"waiting for (?:clients|workers)\. \d+/\d+ (?:clients|workers) joined"),
          "the store's host waited for every rank to connect and some never did: they were never started, "
          "crashed before init_process_group, or could not reach MASTER_ADDR:MASTER_PORT",
          ("Find the ranks that never joined: their logs (or their absence) say why; check that WORLD_SIZE "
           "matches the ranks actually launched.",
           "From a missing node: `nc -zv MASTER_ADDR MASTER_PORT` (firewall, wrong address)."),
          "https://pytorch.org/docs/stable/distributed.html#torch.distributed.TCPStore"),
    Cause("nccl_id_wait", LATE, "ranks waited for another rank to set up NCCL",
          _c(then(r"retrieving ncclUniqueId from \[\d+\]", r"store->get\('\d+'\) got error", lazy=False)),
          "the rank named in brackets creates the NCCL communicator's id and posts it in the store when it reaches "
          "its first collective of the group; the others reached theirs and waited for that id until the timeout. "
          "The store was reachable: that rank had not got there yet (busy before its first collective: tokenising, "
          "loading, evaluating, a barrier inside main_process_first), or was stuck or dead",
          ("Look at what that rank printed last: a progress bar or a dataset map means it was only slow (see the "
           "steps on a busy rank); an error means it died first.",
           "If it was slow: preprocess before launching, or raise the timeout of that phase (init_process_group's "
           "timeout=, the HF Trainer's ddp_timeout)."),
          "https://github.com/huggingface/transformers/issues/17106"),
    Cause("store_unreachable", LAUNCHER, "the store could not be reached",
          _c(then(r"client socket has timed out", r"connect", lazy=False)
             + r"|failed to connect|connect\(\) timed out|Connection refused|"
             r"No route to host|Socket Timeout"),
          "a rank or agent could not connect to the rendezvous store (MASTER_ADDR:MASTER_PORT or --rdzv-endpoint): "
          "wrong address, a firewall, or the store's host not up yet",
          ("Check the address and port every node uses, and that it is reachable: `nc -zv HOST PORT` from each "
           "node; open the port in the firewall/security group.",
           "Use a hostname or IP that all nodes resolve the same way (not localhost on a multi-node job)."),
          "https://github.com/pytorch/pytorch/issues/69197"),
    Cause("rdzv_timeout", LAUNCHER, "the rendezvous never completed",
          _c(r"RendezvousTimeoutError"),
          "torchrun waited for --nnodes agents to join and not enough did within the join timeout",
          ("Start every node with the same --rdzv-id and --rdzv-endpoint; check that every node's agent started "
           "at all (scheduler, image pull).",
           "Raise --rdzv-conf join_timeout=SECONDS if nodes start slowly."),
          "https://github.com/pytorch/pytorch/issues/67547"),
    Cause("store_lost", LAUNCHER, "the rendezvous store went away",
          _c(r"Failed to recv, got 0 bytes|Connection was likely closed|RendezvousConnectionError|"
             r"TCPStore server has shut down|The connection to the C10d store has failed"),
          "the process that held the TCPStore (the torchrun agent at the rendezvous endpoint, or rank 0 with "
          "MASTER_ADDR) died or was cut off; every agent and rank then lost it and stopped",
          ("Look at the node that held the store (the --rdzv-endpoint / MASTER_ADDR host): its own logs and "
           "`dmesg -T` say why it went away (OOM kill, node failure, preemption).",
           "The ranks and agents that lost the store are not the cause; collect the missing node's logs."),
          "https://github.com/pytorch/pytorch/issues/121944"),
    Cause("node_failure", HOST, "a node of the job failed",
          _c(r"NODE_FAIL|NodeNotReady|NodeShutdown|Node failure on|DUE TO NODE FAILURE"),
          "the scheduler lost a node of the job (it stopped answering: a crash, a reboot, a power or network "
          "fault): the ranks on it died with it, and the others lost them",
          ("Give the node's own records to this tool: its kernel log (`journalctl -k -b -1` after a reboot), "
           "and the scheduler's (`scontrol show node NODE`, `kubectl describe node NODE`).",
           "Requeue the job without that node (`--exclude`, a node selector) until its operators clear it."),
          "https://slurm.schedmd.com/sacct.html#SECTION_JOB-STATE-CODES"),
    Cause("scheduler_stop", HOST, "the scheduler took the job's processes away",
          _c(r"PREEMPTED|Preempt(?:ed|ing)|\bEvicted\b|low on resource"),
          "the scheduler stopped the ranks on a node to give it to other work (preemption) or because the node ran "
          "short of a resource (eviction): the job did nothing wrong there, and the others only lost them",
          ("Run in a partition or priority class that is not preempted, or make the job resume from its last "
           "checkpoint (Slurm `--requeue`, an elastic restart policy).",
           "An eviction for memory: ask for a memory request equal to the limit, so the pod is not the first "
           "chosen."),
          "https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/"),
    Cause("bootstrap_mismatch", SETUP, "NCCL's set-up messages disagree between ranks",
          _c(r"bootstrap\.cc:\d+.{0,40}truncated|Message truncated : received \d+ bytes instead of"),
          "NCCL's bootstrap (the socket exchange that sets up communicators and their connections, bootstrap.cc) "
          "received a message longer than it expected ('received N bytes instead of M'; the data path says "
          "'receiving'), and those messages' sizes are fixed by NCCL's code, not by the user's calls: the ranks "
          "run NCCL versions whose set-up messages differ, or that NCCL version has a defect (2.19 had one)",
          ("Check that every rank loads the same NCCL (`python -c 'import torch; print(torch.cuda.nccl.version())'`"
           " on each node, and any nvidia-nccl-cu* package pip installed).",
           "If they match, change the NCCL version: upgrade, or downgrade to the last that worked (2.18.6 "
           "in the thread)."),
          "https://github.com/NVIDIA/nccl/issues/1176"),
    Cause("nccl_invalid_usage", SETUP, "NCCL refused the call (invalid usage)",
          _c(r"ncclInvalidUsage|\binvalid usage\b"),
          "NCCL returned ncclInvalidUsage: most often two ranks of one communicator ended on one GPU (no "
          "torch.cuda.set_device before the first collective, so a barrier() or collective ran on the GPU "
          "numbered by the rank or on cuda:0, not the rank's own device; newer NCCL says 'Duplicate GPU "
          "detected'), else calls NCCL forbids (one communicator used from two streams in a group)",
          ("Call `torch.cuda.set_device(local_rank)` before init_process_group (or pass device_id=), and "
           "`dist.barrier(device_ids=[local_rank])` where a barrier runs before any collective.",
           f"Rerun with {NCCL_DEBUG_RERUN}: NCCL names what it refused in a WARN line."),
          "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"),
    Cause("calls_disagree", PROGRAM, "the ranks disagree on a collective",
          _c(r"Mismatched collective detected|message truncated|"
             r"Detected mismatch between collectives"),
          "one rank sent more (or another operation) than its peer expected: the ranks issued different "
          "collectives, sizes or orders (code that branches on the rank or the data), or ran different NCCL "
          "settings (NCCL_PROTO, NCCL_ALGO) or versions",
          ("Rerun with TORCH_DISTRIBUTED_DEBUG=DETAIL: PyTorch checks each collective's op and shapes across the "
           "ranks and names the one that differs.",
           "Give every node the same image and the same NCCL_* environment; if the error goes away with "
           "NCCL_PROTO=SIMPLE, the settings differ, otherwise the calls do."),
          "https://github.com/NVIDIA/nccl/issues/626"),
    Cause("remote_exited", NETWORK, "a peer exited or the network failed",
          _c(r"remote process exited|ncclRemoteError|Connection reset by peer|Connection closed by remote peer"),
          "NCCL lost a connection to another rank: that rank died (look for the one whose log ends early) or "
          "the network between them failed",
          ("Find the rank that died first: its log stops, or the launcher reports its exit or signal.",
           "If every rank is alive, check the links between the two hosts (`dmesg -T`, NIC error counters)."),
          "https://github.com/NVIDIA/nccl/issues/2076"),
)
NO_REASON = Cause(
    "nccl_no_reason", SETUP, "NCCL failed without saying why",
    re.compile(r"(?!)"),
    "NCCL returned an error but printed no reason: its 'Last error:' is empty or absent",
    (f"Rerun with {NCCL_DEBUG_RERUN}: NCCL prints the reason as a WARN line.",),
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-debug", probe=True)
SYSTEM_ERROR = Cause(
    "nccl_system_error", SETUP, "NCCL's system call failed, with no reason printed",
    re.compile(r"(?!)"),
    "NCCL reported 'unhandled system error' (ncclSystemError: a socket, shared-memory or memory call failed) and "
    "printed no WARN line saying which. Most often, in this order: a container's small /dev/shm (64 MiB by "
    "default), the socket transport picking an interface the other ranks cannot reach (a docker bridge, a "
    "virtual or down interface), or a container network the other node cannot reach",
    ("Inside the container: `df -h /dev/shm`; if it is 64 MiB, run it with `--ipc=host` or `--shm-size=16g` "
     "(Kubernetes: an emptyDir with `medium: Memory` at /dev/shm).",
     "`ip -br addr` on every node: set NCCL_SOCKET_IFNAME to the interface the nodes reach each other on "
     "(`=eth0`, or exclude with `=^docker,lo,veth`).",
     "Across nodes in containers: run them with host networking (`--network=host`, `hostNetwork: true`), or "
     "make sure each container's address is routable from the other node.",
     f"Rerun with {NCCL_DEBUG_RERUN}: the WARN line names the call that failed, which decides between these."),
    "https://github.com/NVIDIA/nccl/issues/473", probe=True)
HOST_KILL = Cause(
    "host_kill", MEMORY, "killed with no traceback (most often by SIGKILL, from the host's OOM killer)",
    re.compile(r"(?!)"),
    "the process was killed with no traceback: the kernel's OOM killer, the container's memory limit, or the "
    "scheduler",
    ("On that host: `dmesg -T | grep -i -E 'killed process|out of memory'`; check the container's memory "
     "limit and the scheduler's log.",
     "Host memory grows with data-loader workers, pinned memory and checkpoint loading: lower them or ask "
     "for more memory."),
    "https://docs.kernel.org/admin-guide/mm/concepts.html#oom-killer")
STOPPED = Cause(
    "stopped_externally", LAUNCHER, "the job was stopped from outside",
    re.compile(r"(?!)"),
    "the launcher received a termination signal (a scheduler's time limit, scancel, kubectl delete, a CI "
    "timeout) while no rank had reported an error or a timeout: the job hung where no timeout applies (NCCL "
    "communicator set-up, a store wait, host code) or was only slow",
    ("Next time, while it hangs: `ncclcheck snapshot` on each node (stacks and flight-recorder dumps of the "
     "live job), or `py-spy dump --pid PID` of each rank.",
     f"Rerun with {NCCL_DEBUG_RERUN} to see how far NCCL's set-up got."),
    "")  # read from the launcher's own behaviour (tests/data/failures/no_init), not from one thread
ALL_CAUSES = (*CATALOGUE, NO_REASON, SYSTEM_ERROR, HOST_KILL, STOPPED)
_BY_KIND = {c.kind: c for c in ALL_CAUSES}
# The cause of a death by signal that the launcher reports without a line of the process's own.
_BY_SIGNAL = {"SIGBUS": _BY_KIND["shm_bus_error"], "SIGSEGV": _BY_KIND["native_crash"],
              "SIGILL": _BY_KIND["native_crash"], "SIGFPE": _BY_KIND["native_crash"]}

# A rank's word that a peer went away: gloo's closed or reset connection, NCCL's remote exit.
PEER_LOST = re.compile(r"Connection (?:closed|reset)|closed by peer|remote process exit|ncclRemoteError", re.IGNORECASE)
_SYSTEM = re.compile(r"unhandled system error|unhanled system error|ncclSystemError", re.IGNORECASE)
_OOM = re.compile(r"Tried to allocate ([\d.]+ [KMGT]?i?B)")
_OOM_GPU = re.compile(r"GPU (\d+) has a total capacity of ([\d.]+ [KMGT]?i?B) of which ([\d.]+ [KMGT]?i?B) is free")
_OOM_OLD = re.compile(r"GPU (\d+); ([\d.]+ [KMGT]?i?B) total capacity; .*?([\d.]+ [KMGT]?i?B) free")
_OOM_MINE = re.compile(r"this process has ([\d.]+ [KMGT]?i?B) memory in use")
_OOM_FRAG = re.compile(r"(?<![\d.])([\d.]+ [KMGT]?i?B) is reserved by PyTorch but unallocated")
_IB_STATUS = re.compile(r"(?:status=|with error )(\d+)")
# ibv_wc_status values NCCL prints as "status=N" / "error N" (verbs.h)
_IB_MEANING = {4: "local protection error: memory registration, often GPUDirect RDMA", 5: "flushed: the queue pair "
               "had already failed", 10: "remote access error", 12: "transport retry counter exceeded: the peer "
               "never acknowledged", 13: "receiver-not-ready retry counter exceeded"}
_ID_FROM = re.compile(r"ncclUniqueId from \[(\d+)\]")
_ID_BY = re.compile(r"\[(\d+)\] is setting up NCCL communicator")
_STORE_ADDR = re.compile(r"remote=\[?([\w.:-]+?)\]?:(\d+)\)")
# What the asserting kernel usually means.
_KERNELS = (
    (re.compile(r"indexSelect|srcIndex < srcSelectDimSize"), "an index past the end of an embedding or index_select "
                                                             "(a token id >= the vocabulary size)"),
    (re.compile(r"nll_loss|n_classes|cur_target"), "a label outside [0, num_classes) in a loss"),
    (re.compile(r"ScatterGather|idx_dim"), "a gather/scatter index out of bounds"),
    (re.compile(r"IndexKernel|index out of bounds"), "an advanced-indexing index out of bounds"),
)


_CUDA_OOM = next(c.pattern for c in CATALOGUE if c.kind == "cuda_oom")


def one_line(message: str) -> str:
    """An error in one line: a GPU's OOM as its sizes, anything else cut at its first sentence that matters (a host's
    OOM, "srun: error: vm: task 1: Out Of Memory", is quoted as it stands: it is no CUDA allocation)."""
    if _CUDA_OOM.search(message):
        return oom_line(message)
    first = message.split(", NCCL version")[0].split(" Search for `")[0]
    return first if len(first) <= 200 else first[:197] + "..."


def oom_line(message: str) -> str:
    """``CUDA out of memory: asked 372.53 GiB on GPU 1 (139.80 GiB total, 123.46 GiB free)``, from whatever is printed."""
    parts = []
    if m := _OOM.search(message):
        parts.append(f"asked {m[1]}")
    gpu = _OOM_GPU.search(message) or _OOM_OLD.search(message)
    if gpu:
        parts.append(f"on GPU {gpu[1]} ({gpu[2]} total, {gpu[3]} free)")
    if m := _OOM_MINE.search(message):
        parts.append(f"this process held {m[1]}")
    if m := _OOM_FRAG.search(message):
        parts.append(f"{m[1]} reserved but unallocated")
    return "CUDA out of memory" + (": " + ", ".join(parts) if parts else "")


@dataclass(frozen=True)
class _Said:
    """One thing a process printed that a cause may match: who, what, where."""

    rank: int | None
    text: str
    loc: Loc
    clue: str | None = None  # the Clue kind, None for an error line; "system" for a host's or scheduler's record
    clock_s: float | None = None
    joined: Joined | None = None


def _said(scans: Sequence[FileScan]) -> list[_Said]:
    out: list[_Said] = []
    for s in scans:
        for e in s.errors:
            out.append(_Said(e.who.rank, e.message, e.loc))
        for c in s.clues:
            out.append(_Said(c.who.rank, c.text, c.loc, c.kind, c.clock_s))
        # TORCH_DISTRIBUTED_DEBUG=DETAIL's report is read into a Mismatch, not an error line; it is said here in
        # its own words so that the catalogue's pattern sees it.
        for m in s.mismatches:
            out.append(_Said(m.who.rank, f"Detected mismatch between collectives on ranks {m.rank_a} and {m.rank_b} "
                                         "(TORCH_DISTRIBUTED_DEBUG=DETAIL)", m.loc, "mismatch"))
    # A host's or a scheduler's record speaks for the job only where it joins a rank (a PID, a GPU, a host of it):
    # the rest of a node's kernel log is other processes' business.
    # Where the inputs place no rank at all, a record stands for itself, said to be joined to none.
    for j in join_events(scans):
        if j.event.kind in _NOT_A_CAUSE or j.event.xid is not None and not fatal(j.event.xid):
            continue
        if j.ranks:
            out += [_Said(r, j.event.text, j.event.loc, "system", None, j) for r in j.ranks]
        elif j.by == "none":
            out.append(_Said(None, j.event.text, j.event.loc, "system", None, j))
    return out


def _detail(cause: Cause, hits: Sequence[_Said], fired_s: float | None = None) -> str:
    texts = [h.text for h in hits]
    if joined := next((h.joined for h in hits if h.joined is not None), None):
        return describe(joined, fired_s)
    if cause.kind == "cuda_oom":
        return oom_line(max(texts, key=len))
    if cause.kind == "device_assert":
        where = next((h.text for h in hits if h.clue == "cuda_assert"), None)
        if where is None:
            return "CUDA error: device-side assert triggered (the assertion line itself is not in these inputs)"
        meaning = next((m for p, m in _KERNELS if p.search(where)), None)
        return f"device-side assert: {where}" + (f", that is {meaning}" if meaning else "")
    if cause.kind == "store_lost":
        addrs = sorted({f"{m[1]}:{m[2]}" for t in texts for m in _STORE_ADDR.finditer(t)})
        first = next((h.text for h in hits if h.clue == "store"), texts[0])
        at = f" (store at {', '.join(addrs)})" if addrs else ""
        return one_line(first.split("): ", 1)[-1]) + at
    if cause.kind == "ib_error":
        best = next((h for h in hits if h.clue == "last_error" and h.text), None) or hits[0]
        text = best.text.split("Last error:")[-1].strip()
        m = _IB_STATUS.search(text)
        said = _IB_MEANING.get(int(m[1])) if m else None
        return one_line(text) + (f" (status {m[1]}: {said})" if m and said else "")
    if cause.kind == "nccl_id_wait":
        m = _ID_FROM.search(hits[0].text)
        return (f"the ranks waited for rank {m[1]}'s NCCL id in the store until the timeout"
                if m else "ranks waited for another rank's NCCL id in the store") + f": {one_line(hits[0].text)}"
    if cause.kind in ("nccl_no_reason", "nccl_system_error"):
        error = next((h.text for h in hits if h.clue is None), None)
        empty = any(h.clue == "last_error" for h in hits)
        return (one_line(error) + "; " if error else "") + (
            "NCCL's 'Last error:' is empty" if empty else "no 'Last error:' text follows it in these inputs")
    best = next((h for h in hits if h.clue == "last_error" and h.text), None) or hits[0]
    return one_line(best.text)


def _found(cause: Cause, hits: Sequence[_Said], fired_s: float | None = None) -> Diagnosis:
    ranks = tuple(sorted({h.rank for h in hits if h.rank is not None}))
    first = min(hits, key=lambda h: (h.clue not in ("cuda_assert", "system"), h.loc.file, h.loc.line))
    locs = tuple(dict.fromkeys(h.loc for h in sorted(hits, key=lambda h: (h.rank is None, h.rank or 0))))[:8]
    clocks = [h.clock_s for h in hits if h.clock_s is not None]
    return Diagnosis(cause, ranks, first.text, first.loc, locs, _detail(cause, hits, fired_s),
                     min(clocks, default=None))


# The setting a cause is about: where the log prints the value the job ran with, the verdict quotes it.
_SETTING_OF = {"no_socket_interface": "NCCL_SOCKET_IFNAME", "net_plugin": "NCCL_NET"}


def _quoting_the_setting(d: Diagnosis, scans: Sequence[FileScan]) -> Diagnosis:
    """The diagnosis with the value of its setting as the log printed it ("set by environment to eth2")."""
    name = _SETTING_OF.get(d.cause.kind)
    fact = next((f for s in scans for f in s.facts if name and f.key == name), None)
    if fact is None:
        return d
    return replace(d, detail=f"{d.detail}; the job ran with {name}={fact.value} ({fact.loc}), which named nothing "
                             "NCCL could use", locs=(*d.locs, fact.loc)[:8])


def diagnose(scans: Sequence[FileScan], killed: Sequence[tuple[int | None, Loc, str]] = (),
             fired_s: float | None = None, silent: Sequence[int] = ()) -> Diagnosis | None:
    """The first cause of the catalogue that the inputs show, or a cause read from what is missing.

    ``fired_s``: when the first collective timed out (seconds into the day, by the job's log clock), to set a host's
    record against.

    ``killed`` lists the ranks that died of a fatal signal (rank, where, signal; "" where the line that says so names
    none, as Ray's "its worker process has died"): SIGKILL with no traceback is the host-OOM cause, SIGBUS NCCL's
    shared memory, SIGSEGV and the like a native crash.

    ``silent`` lists the ranks whose input stops without a word while every other rank's error says a peer went
    away: a process that dies without a traceback (SIGKILL cannot be caught; Python prints nothing for it), read
    from the survivors' lines, since the dead rank wrote none.
    """
    said = _said(scans)
    # A launcher's report of a kill it could not tie to a rank ("died with <Signals.SIGKILL: 9>", DeepSpeed's
    # "exits with return code = -9").
    unnamed = [(None, s.loc, sig) for s in said if (sig := formats.launcher_signal(s.text))][:1]
    for cause in CATALOGUE:
        hits = [s for s in said if cause.pattern.search(s.text)]
        # A killed rank is why its peers lost it (or read a cut message).
        if hits and not (cause.kind in ("remote_exited", "calls_disagree", "ib_error") and (killed or unnamed or silent)):
            return _quoting_the_setting(_found(cause, hits, fired_s), scans)
    if silent:
        lost = [s for s in said if s.rank not in silent and s.clue is None and PEER_LOST.search(s.text)]
        if lost:
            return _silent_death(scans, silent, lost, unnamed[0] if unnamed and len(silent) == 1 else None)
    nccl = [s for s in said if s.clue is None and (s.text.startswith("NCCL error") or _SYSTEM.search(s.text))]
    if nccl:
        empty = [s for s in said if s.clue == "last_error" and not s.text]
        said_why = {c.rank for c in said if c.clue == "last_error" and c.text}
        unexplained = [s for s in nccl if s.rank not in said_why]
        if empty or unexplained:
            system = any(_SYSTEM.search(s.text) for s in unexplained)
            return _found(SYSTEM_ERROR if system else NO_REASON, unexplained + empty)
    versions = _versions(scans)
    if versions is not None:
        return versions
    killed = killed or unnamed
    if killed:
        sig = killed[0][2]
        ranks = [r for r, _, s in killed if s == sig and r is not None]
        how = _BY_SIGNAL.get(sig, HOST_KILL)
        if not sig:  # a launcher's word that the process died without an error of its own, naming no signal
            words = next((s.text for s in said if s.loc == killed[0][1]), "")
            return Diagnosis(how, tuple(ranks), words or "died", killed[0][1],
                             tuple(loc for _, loc, s in killed if s == sig)[:8],
                             f"{rank_phrase(ranks) or 'a process'} died with no error of its own, by a signal no line "
                             f"names ({one_line(words)})" if words else
                             f"{rank_phrase(ranks) or 'a process'} died with no error of its own")
        return Diagnosis(how, tuple(ranks), f"killed by {sig}", killed[0][1],
                         tuple(loc for _, loc, s in killed if s == sig)[:8],
                         f"{rank_phrase(ranks)} died of {sig} with no traceback" if ranks else
                         f"killed by {sig} with no traceback (the launcher's line names no rank)")
    # Slurm's cancellations and mpirun's time limit are the launchers' stop lines (evidence/formats/).
    stops = [s for s in said if s.clue == "launcher" and ("death signal" in s.text or formats.is_stop(s.text))
             or s.joined is not None and s.joined.event.kind in ("time_limit", "cancelled")]
    errors = [e for s in scans for e in s.errors if e.kind is not ErrorKind.EXCEPTION or "SignalException" not in e.message]
    timeouts = any(s.works or s.statuses for s in scans)
    if stops and not errors and not timeouts:
        return Diagnosis(STOPPED, (), stops[0].text, stops[0].loc, tuple(s.loc for s in stops)[:8], stops[0].text)
    return None


def _silent_death(scans: Sequence[FileScan], silent: Sequence[int], lost: Sequence[_Said],
                  unnamed: tuple[None, Loc, str] | None) -> Diagnosis:
    """Ranks that wrote nothing while the others lost their peer: they died without a traceback. A launcher's report
    of a worker's death by a signal that names no worker is the one silent rank's: every other rank wrote an error of
    its own, and a process ends by its own error (an exit status, the watchdog's abort), not by that signal."""
    others = sorted({s.rank for s in lost if s.rank is not None})
    m = PEER_LOST.search(lost[0].text)
    assert m is not None
    words = lost[0].text[m.start():].split(". ")[0].rstrip(".")[:120]
    host = "".join(f", the host of {rank_phrase(p.ranks)}" for p in peers_lost(scans)[:1]
                   if p.ranks and p.peer.split("<")[0] in words)
    peers = (f"{rank_phrase(others) if others else 'the other ranks'} lost "
             f"{'its connection' if len(others) == 1 else 'their connections'} to a peer ({words}){host}")
    locs = tuple(s.loc for s in lost)
    if unnamed is not None:
        _, at, sig = unnamed
        return Diagnosis(_BY_SIGNAL.get(sig, HOST_KILL), tuple(silent), f"killed by {sig}", at, (at, *locs)[:8],
                         f"{rank_phrase(silent)} died of {sig} with no traceback: the launcher reports a worker dead "
                         f"of {sig} without naming it, and {rank_phrase(silent)} is the only rank that wrote no "
                         f"error of its own; {peers}")
    return Diagnosis(HOST_KILL, tuple(silent), lost[0].text, lost[0].loc, locs[:8],
                     f"{rank_phrase(silent)} stopped with no error, traceback or exit line while {peers}"
                     + ("; these inputs do not tell which of them died first" if len(silent) > 1 else ""))


def _versions(scans: Sequence[FileScan]) -> Diagnosis | None:
    seen: dict[str, list[tuple[int | None, Loc]]] = {}
    for s in scans:
        for f in s.facts:
            if f.key == "nccl_version":
                seen.setdefault(f.value, []).append((f.who.rank, f.loc))
    if len(seen) < 2:
        return None
    detail = "; ".join(f"{v} on {rank_phrase(r for r, _ in who if r is not None) or 'unnamed ranks'}"
                       for v, who in sorted(seen.items()))
    locs = tuple(who[0][1] for who in seen.values())
    ranks = tuple(sorted({r for who in seen.values() for r, _ in who if r is not None}))
    return Diagnosis(VERSIONS, ranks, detail, locs[0], locs, f"NCCL versions differ: {detail}")


# Records that say a process was slow or blocked, not why it died: findings, never the cause.
_NOT_A_CAUSE = {"hung_task"}
_WHAT = {"oom_killed": "was killed by the kernel's OOM killer", "scheduler_oom": "was ended by the scheduler for "
         "its memory (OUT_OF_MEMORY)", "segfault": "died of a segmentation fault", "evicted": "was evicted",
         "node_failure": "lost its node", "preempted": "was preempted", "time_limit": "reached the job's "
         "time limit", "cancelled": "was cancelled", "killed_by_scheduler": "was killed by the scheduler",
         "pcie_error": "lost its GPU to an uncorrected PCIe error"}


def _gib(kb: str) -> str:
    return f"{int(kb) / (1 << 20):.2f} GiB"


def _time_of_day(clock: str) -> float:
    h, m, sec = clock.rsplit(" ", 1)[-1].split(":")
    return int(h) * 3600 + int(m) * 60 + float(sec)


def _against(ev: SystemEvent, fired_s: float | None) -> str:
    """When the record was written against when the first collective timed out, as far as the clocks allow."""
    if fired_s is None:
        return ""
    if ev.clock is None:
        return (" (the kernel log's times count from its host's boot, dmesg without -T: they cannot be set against "
                "the job's clock)") if ev.monotonic_s is not None else ""
    when = stamps.of_clock(ev.clock)  # with its date: right across midnight
    gap = fired_s - when if when is not None else stamps.time_of_day(fired_s) - _time_of_day(ev.clock)
    if abs(gap) > 12 * 3600:
        return ""
    said = f"{abs(gap):.0f} s {'before' if gap >= 0 else 'after'} the first timeout"
    return f", {said} (by the two logs' clocks, which may disagree between hosts)"


def describe(j: Joined, fired_s: float | None = None) -> str:
    """One record in words, with the join: ``rank 1 (pid 506 on vm) was killed by the kernel's OOM killer at
    2026-11-25 11:37:29 (memory cgroup /ncclcheck_oom at its limit of 4.00 GiB; the process held 3.43 GiB)``."""
    ev = j.event
    who = (rank_phrase(j.ranks) if j.ranks else f"process {ev.pid}" if ev.pid is not None else
           f"pod {ev.pod}" if ev.pod else f"the ranks on {ev.host}" if ev.host else
           "the job" if ev.source == "slurm" else "a process")
    place = [f"pid {ev.pid}"] if ev.pid is not None and j.ranks else []
    if (ev.host or ev.pod) and j.ranks:
        place.append(f"on {ev.pod or ev.host}")
    elif ev.host and ev.pod:
        place.append(f"on {ev.host}")
    if ev.bus and ev.kind != "xid":
        place.append(f"GPU {ev.bus}")
    at = f" at {ev.clock}" if ev.clock else f" {ev.monotonic_s:.0f} s after its host booted" if ev.monotonic_s else ""
    at += _against(ev, fired_s)
    head = who + (f" ({' '.join(place)})" if place else "")
    d = dict(ev.details)
    if ev.kind == "xid" and ev.xid is not None:
        gpu = f"the GPU of {who}" if j.ranks or ev.pid is not None else "the GPU"
        text = f"{gpu} (bus {ev.bus}) reported Xid {ev.xid}{at}: {meaning(ev.xid)}"
    elif ev.source == "kubernetes" and ev.kind == "oom_killed":
        text = f"{head} was OOMKilled (its container's memory limit; Kubernetes: {ev.text}){at}"
    elif ev.source != "kernel":
        text = f"{head} {_WHAT.get(ev.kind, 'was ended')}{at} ({ev.source.capitalize()}: {ev.text})"
    else:
        text = f"{head} {_WHAT.get(ev.kind, 'was ended: ' + ev.text)}{at}"
    if ev.kind == "oom_killed":
        held = f"the process held {_gib(d['anon_rss_kb'])}" if "anon_rss_kb" in d else ""
        if "limit_kb" in d and d.get("scope") == "cgroup":
            limit = f"memory cgroup {d.get('memcg', '')} at its limit of {_gib(d['limit_kb'])}".replace("  ", " ")
            text += f" ({limit}{'; ' + held if held else ''})"
        elif held:
            text += f" (host memory; {held})"
    if ev.kind == "segfault" and "library" in d:
        text += f", in {d['library']}"
    if j.by == "none":
        text += ("; no input says which rank that was (torchrun's console or the ranks' NCCL lines give each "
                 "rank's PID, GPU and host)")
    elif j.by:
        by = {"pid": "PID", "bus": "GPU bus ID", "slurm_task": "the Slurm task its memory cgroup names"}
        text += f"; joined by {by.get(j.by, 'host')}"
    if j.caveat:
        text += f" ({j.caveat})"
    return text


def awaited_rank(d: Diagnosis) -> int | None:
    """The rank whose NCCL id the others waited for (``retrieving ncclUniqueId from [0]``)."""
    m = _ID_FROM.search(d.text)
    return int(m[1]) if m else None


def awaiting_ranks(d: Diagnosis) -> list[int]:
    """The ranks that say they waited for it (``[1] is setting up NCCL communicator``), where no prefix names them."""
    return sorted({int(m[1]) for loc_text in (d.text,) for m in _ID_BY.finditer(loc_text)})


def cause(kind: str) -> Cause:
    """A catalogue entry by its kind (for the docs and the tests)."""
    return _BY_KIND[kind]
