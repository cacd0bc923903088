"""What a process says when it fails: Python's exceptions, CUDA's errors, fatal signals, and the lines that say why.

An exception's last line (``RuntimeError: CUDA error: …``, ``torch.OutOfMemoryError: …``) is the rank's own error,
unless it restates the watchdog's timeout (the cascade, read as a record in evidence/formats/pgnccl.py). A process
killed in native code has no traceback: its last words name the signal (UCX's "Caught signal 7 (Bus error: …)",
glog's "*** SIGSEGV (@0x0) received by PID …", faulthandler's "Fatal Python error: Segmentation fault"). The clues
beside an error say why: a device-side assertion, a CUDA error named in any line, a TCPStore's failure, the launcher's
own words, NCCL's sentences (evidence/formats/nccl.py). Each is read behind a few literal words, kept by the block
reader wherever they stand.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck import signals
from ncclcheck.evidence.formats import busy, cxx, nccl, storeclient, torchrun
from ncclcheck.evidence.formats.collectors import LABEL
from ncclcheck.evidence.formats.nccl import CONNECTION, SAYS
from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample, Trigger
from ncclcheck.evidence.linear import then
from ncclcheck.evidence.stamps import glog
from ncclcheck.evidence.types import Clue, ErrorKind, Loc, RankError, Read, Stating, Who
from ncclcheck.evidence.wcstatus import GATE as WC_GATE
from ncclcheck.evidence.wcstatus import MLX5_CQE_DUMP, completion_error

ERROR_WORDS = ("Error", "Exception", "Interrupt", "terminate called",
               "RPC call to", "Scheduler hit an exception")  # a framework's own sentence (FRAMEWORK_FAILED)
PY_ERROR = re.compile(r"^(?P<name>[A-Za-z_][\w.]*(?:Error|Exception|Interrupt))(?::\s?(?P<message>.*))?$")
# A library's own news, raised on the ranks that did not fail, that it stopped because another rank failed: Horovod's
# SHUT_DOWN_ERROR (horovod/common/common.h, 0.13 on: "Horovod has been shut down. This has been caused by an exception
# on one of the rank or an attempt to allreduce, allgather or broadcast a tensor after one of the ranks has finished
# execution." in 0.13-0.14; since 0.15 "This was caused by an exception on one of the ranks or ... If the shutdown was
# caused by an exception, you should see the exception in the log before the first shutdown message."), raised as
# PyTorch's RuntimeError, TensorFlow's UnknownError or, from 0.20, HorovodInternalError. The rank stopped after
# another's failure (job/build.py: an aborted ending), whose exception is earlier in that rank's own output.
SHUTDOWN = re.compile(r"Horovod has been shut down")
# An exception that restates the watchdog's timeout or a worker's failure reported elsewhere: not the rank's own.
CASCADE = re.compile(
    r"Watchdog caught|communicator was aborted|watchdog thread terminated|Some NCCL operations have failed"
    r"|ChildFailedError|Detected mismatch between collectives|" + SHUTDOWN.pattern + "|"
    + then("DistBackendError", "watchdog|Watchdog", lazy=False)
)

# A process's own last words on a fatal signal: UCX's "Caught signal 7 (Bus error: …)", glog's "*** SIGSEGV (@0x0)
# received by PID …", Python's faulthandler "Fatal Python error: Segmentation fault", MPI's "Signal: Bus error (7)", a
# shell's "Bus error (core dumped)", gdb's stop on it ("Program received signal SIGSEGV, Segmentation fault." or
# 'Thread 7 "python" received signal SIGBUS, Bus error.': gdb/infrun.c, print_signal_received_reason). SIGABRT is left
# out: the watchdog's abort after a timeout ends ranks with it. On Windows a native fault is an exception with its
# NTSTATUS code (signals.BY_NTSTATUS): CPython's faulthandler prints "Windows fatal exception: access violation"
# (Python/faulthandler.c, faulthandler_exc_handler), a program's handler or the debugger the code with its words
# ("exception 0xc0000005", "0xC0000005: Access violation").
FATAL_SIGNAL = re.compile(
    r"Caught signal (?P<caught>\d+) \(|(?P<glog>SIG[A-Z]{1,12}) \(@0x[0-9a-f]+\) received by PID|"
    r"(?:Program|Thread \d+(?: \"[^\"]{0,80}\")?) received signal (?P<gdb>SIG[A-Z]{1,12}),|"
    r"Fatal Python error: (?P<python>Segmentation fault|Bus error|Illegal instruction|Floating point exception)|"
    r"Signal: [\w ]+ \((?P<mpi>\d+)\)$|^(?P<shell>Segmentation fault|Bus error|Illegal instruction)"
    r"(?: \(core dumped\))?$"
    r"|Windows fatal exception: (?P<windows>access violation|stack overflow|illegal instruction"
    r"|int divide by zero|float divide by zero)"
    r"|xception (?:code:? )?(?P<nt>0x[cC]0000005|0x[cC]00000[fF][dD]|0x[cC]000001[dD]|0x[cC]0000094"
    r"|0x[cC]000008[eE])\b|(?P<ntw>0x[cC]0000005): Access violation"
    # a DataLoader worker's own handler before it dies of the signal (torch/csrc/DataLoader.cpp: "ERROR: Unexpected
    # segmentation fault encountered in worker.", "... floating-point exception ..."; its bus error's words are the
    # shm clue's, SHM_FULL)
    r"|(?:^|ERROR: )Unexpected (?P<loader>segmentation fault|floating-point exception) encountered in worker")
_LOADER = {"segmentation fault": "Segmentation fault", "floating-point exception": "Floating point exception"}
SIGNAL_WORDS = ("ignal", "SIG", "Segmentation", "rror", "nstruction", "xception ", "fatal exception", ": Access violation",
                "ncountered in worker")

# An exception a process raises with the news that another process died, which it outlives by design: vLLM's
# EngineDeadError (vllm/v1/engine/exceptions.py: "Raised when the EngineCore dies. Unrecoverable."), raised in the API
# server or the client once the engine's process is gone, and AsyncEngineDeadError before V1
# (vllm/engine/async_llm_engine.py). The server answers on (each request an error), so its going on does not withdraw
# the line (evidence/parse.py): the death it reports is the failure.
DEATH_NEWS = re.compile(r"\b(?:Async)?EngineDeadError\b")

# A serving framework's own sentence that one of its processes failed, standing alone (a paste that kept only it, or
# a logger that prints it with no level word): vLLM's executor giving up on its workers' answer to a step
# (vllm/v1/executor/multiproc_executor.py, collective_rpc: TimeoutError(f"RPC call to {method} timed out."), after
# VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS for execute_model and sample_tokens), and SGLang's scheduler process logging the
# exception that ends it, its traceback after the words (sglang/srt/managers/scheduler.py, run_scheduler_process:
# "Scheduler hit an exception: {traceback}", then the server is taken down). Each is the process's error as it
# stands; job/statements.toml says what it means.
FRAMEWORK_FAILED = re.compile(r"^RPC call to \w{1,80} timed out|Scheduler hit an exception:")

# PyTorch's watchdog as it takes its process down after a work of its group failed or timed out
# (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, WorkNCCL::handleException: "Some NCCL operations have failed or
# timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on
# corrupted/incomplete data.", then "To avoid data inconsistency, we are taking the entire process down."; one line
# in 1.x's handleNCCLGuard). It says a failure happened, never which work or why: the error it caught is printed
# beside it, and the line is read as the teardown only, quoted where nothing else is read (job/stated.py).
TEARDOWN = re.compile(r"Some NCCL operations have failed or timed out|we are taking the entire process down")
# PyTorch's DataLoader worker killed by SIGBUS, in its own words (torch/csrc/DataLoader.cpp): shared memory ran out.
SHM_FULL = re.compile(r"bus error encountered in worker\. This might be caused by insufficient shared memory")
# The caching allocator's out-of-memory message (c10/cuda/CUDACachingAllocator.cpp: "CUDA out of memory. Tried to
# allocate ..."; ROCm's and XPU's builds name their device) inside a line that is no exception's: a framework that
# caught the error and printed it in its own record (fairseq's trainer: "OOM: Ran out of memory with exception: ...",
# 0.6's "| WARNING: ran out of memory with exception: ...;\n Skipping batch") and went on. Read as a CUDA error of
# the line's words (job/statements.toml says what a rank that skipped its batch does to the others).
CAUGHT_OOM = re.compile(r"out of memory\. Tried to allocate")  # the device's name before it: CUDA, HIP, XPU
# A launcher's words that it could not start or reach its processes on another node: ssh's own (OpenSSH:
# "ssh: connect to host %s port %s: %s", "Host key verification failed.", "Permission denied (%s).") and Open MPI's
# runtime's (ORTE and PRTE's help texts: a daemon that could not be started, failed after launch or lost; ORTE's
# "does not know how to route a message"; a remote shell without the daemon; a worker image without the ssh server
# that mpirun's remote launch needs, as the MPI operator's workers start it); read as the launcher's clues for the
# catalogue's remote_launch.
REMOTE_LAUNCH = (r"ssh: connect to host|ssh: Could not resolve hostname|Host key verification failed"
                 r"|Permission denied \([a-z-]+[,)]"
                 r"|lost communication with a? ?remote daemon|start one or more daemons|daemon has unexpectedly failed"
                 r"|how to route a message|\b[op]rted: command not found|\b[op]rted: No such file"
                 r"|\bsshd: command not found|\bsshd: No such file")
# A native frame of UCX or UCC (the transport Open MPI and HPC-X run MPI over: pml ucx, coll ucc), as a backtrace
# prints it: UCX's own ("ucp_request_cancel()  .../ucp_request.c:252"), glibc's and Open MPI's
# ("libucp.so.0(ucp_worker_progress+0x5a)"), gdb's ("in ucp_worker_progress () from libucp.so.0"). Its functions
# are prefixed by the library (ucp_, uct_, ucs_, ucm_, ucc_; openucx/ucx and openucx/ucc); a frame without its
# symbol, or the library's name alone (a loader's error names it too), is not read; nor are the frames of UCX's signal
# handler itself (ucs/debug/debug.c: ucs_handle_error, ucs_error_signal_handler, ucs_debug_handle_error_signal, the
# logging it calls), which head the backtrace of a crash anywhere in the process (evidence/formats/backtrace.py).
UCX_FRAME = re.compile(r"\b(?:ucp|uct|ucm|ucc|ucs(?!_(?:handle_error|fatal_error|error_|debug_|log_)))_[a-z]\w*"
                       r"(?:\(\)| \(\)|\+0x)")
# The store's client in its own words (torch/csrc/distributed/c10d/socket.cpp, SocketConnectOp: "The client socket
# has failed to connect to any network address of (host, port).", "... to host:port (errno: N - text).", "The client
# socket has timed out after Nms while trying to connect to (host, port).", "The network addresses of (host, port)
# cannot be retrieved (gai error: N - text)."; 1.x-2.0 wrote the timeout's address as host:port): a store that could
# not be reached, said by the client itself, with or without the exception's name (DistNetworkError) or c10d's tag.
STORE_CLIENT = (r"client socket has failed to connect to|client socket has timed out after"
                r"|[Nn]etwork addresses of \([^()]{1,300}\) cannot be retrieved")
# A socket layer's own words that it reached no peer, or the wrong one, standing alone (no exception's name before
# them): gloo's pair failing to connect, as gloo before its single listening socket (2023) printed it
# (gloo/transport/tcp/pair.cc: GLOO_ERROR_MSG("connect ", peer_.str(), ": ", strerror(optval)), that is
# "[<file>:<line>] connect [<address>]:<port>: <strerror>"), and Open MPI's TCP BTL answered by another process than
# the one it dialled (opal/mca/btl/tcp/btl_tcp_endpoint.c, mca_btl_tcp_endpoint_recv_connect_ack: "received unexpected
# process identifier %s" before 4.0, "...: got %s expected %s" since); NVSHMEM's UID bootstrap finding no interface
# (src/modules/bootstrap/uid/bootstrap_uid.cpp, BOOTSTRAP_ERROR_PRINT's "<file>:<function>:<line>: " then "No socket
# interface found" or "No usable listening interface found"), and Triton-distributed's launcher (scripts/launch.sh)
# warning that the interface it gives NVSHMEM's bootstrap does not exist ("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=<name>
# does not exist..."). The catalogue's socket_address reads them.
SOCKET_SAYS = (r"\bpair\.cc:\d{1,6}\] connect \[[^\]\s]{1,100}\]:\d{1,5}: "
               r"|received unexpected process identifier"
               r"|bootstrap_uid\.cpp:\w{1,80}:\d{1,6}: No (?:socket|usable listening) interface found"
               r"|NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=\S{1,100} does not exist")
CLUE_GATE = re.compile(
    r"Last error|Assertion `|CUDA error|TCPStore|\[c10d\]|death signal|closing signal|[Rr]endezvous|clients joined"
    r"|THCudaCheck|cuda runtime error|CUDA driver error"
    r"|CANCELLED AT|oom_kill|oom-kill|OOM ?Kill|Out Of Memory"
    r"|workers joined|will restart worker group|Restarting worker group|Some NCCL operations have failed"
    r"|taking the entire process down|" + REMOTE_LAUNCH
    + r"|\bucp_[a-z]\w* ?[(+]|\buct_[a-z]\w* ?[(+]|\bucs_[a-z]\w* ?[(+]|\bucm_[a-z]\w* ?[(+]|\bucc_[a-z]\w* ?[(+]|"
    + SAYS.pattern
    + "|" + SHM_FULL.pattern
    + "|" + CAUGHT_OOM.pattern  # an out-of-memory a framework caught and printed in its own record
    + "|" + WC_GATE  # a work completion that failed: its status in rdma-core's or UCX's words (evidence/wcstatus.py)
    + r"|Test CUDA failure|Test HIP failure"  # nccl-tests' CUDACHECK (src/common.h), rccl-tests' HIPCHECK
    + r"|The connection to the C10d store has failed"  # the c10d rendezvous backend's (c10d_rendezvous_backend.py)
    + "|" + STORE_CLIENT  # the TCPStore client's own lines, whether or not an exception's name precedes them
    + "|" + SOCKET_SAYS  # gloo's pair and Open MPI's TCP BTL on the peer they reached
    + r"|CoordinationService/RegisterTask"  # JAX's and TensorFlow's coordination service (STORE_FAIL)
    + "|" + SHUTDOWN.pattern  # Horovod's shutdown after another rank's failure
)
# Words one of which every clue line holds: plain substring tests first, the gate's regex only where one is there.
CLUE_WORDS = ("rror", "Out Of Memory", "OOM", "oom_kill", "oom-kill", "THCudaCheck", "CANCELLED", "ssertion", "TCPStore",
              "c10d", "C10d store", "signal",
              "endezvous", "joined", "restart", "Restart", "interface", "AF_INET", "plugin", "peer", "Call to",
              "NCCL operations", "entire process down", "CUDA device", "same GPU", "Duplicate GPU", "ssh: ",
              "Host key verification", "Permission denied (", "remote daemon", "daemons", "daemon has", "route a message",
              "rted: ", "sshd: ", "ucp_", "uct_", "ucs_", "ucm_", "ucc_", "status=", "CUDA failure",
              "HIP failure", "Tried to allocate",
              "maxSharedMem", "client socket", "etwork addresses of", "] connect [",
              "unexpected process identifier", "CoordinationService/", "SOCK_IFNAME=",
              "bootstrap_uid", "has been shut down",
              "(synd 0x")  # UCX's mlx5 transports' completion error, its syndrome's words before it (evidence/wcstatus.py)
# The resolver's and NCCL's bare errors and torchrun's restarts, which the catalogue's causes read from the lines.
_OTHER_WORDS = ("gai error", "cannot be retrieved", "system error", "worker group")
_CUDA_ASSERT = re.compile(r"(?<![\w.])(?P<file>[\w.]+\.cuh?):(?P<line>\d+): (?P<kernel>(?:(?!\.cuh?:\d+: ).)*?): "
                          r"block: \[[\d,]+\], thread: \[[\d,]+\] Assertion `(?P<condition>(?:(?!Assertion `).)+)` "
                          r"failed")
_CUDA_ERROR = re.compile(r"CUDA error: (?P<what>.+?)(?:\.?$|\. | Search for | CUDA kernel errors)")
# The same error in the words of older releases and of CUDA's driver API, each naming cudaGetErrorString's text (or
# cuGetErrorString's): THC's check (PyTorch <= 1.10, aten/src/THC/THCGeneral.cpp: "THCudaCheck FAIL file=%s line=%i
# error=%i : %s"; THCudaCheckWarn the same), THError's exception ("cuda runtime error (%d) : %s at %s:%d") and c10's
# driver API check (c10/cuda/driver_api.h: "CUDA driver error: %s"), and nccl-tests' CUDACHECK (src/common.h: "%s:
# Test CUDA failure %s:%d '%s'", the host, the file and line, cudaGetErrorString), and rccl-tests' own (ROCm/rccl-tests
# src/common.h from its first release in 2019 to March 2024: "%s: Test HIP failure %s:%d '%s'", hipGetErrorString;
# since then the source is nccl-tests' hipified at build, whose words are CUDA's).
_CUDA_OLD = re.compile(r"THCudaCheck(?:Warn)? FAIL file=\S+ line=\d+ error=\d+ : (?P<what>.+)"
                       r"|cuda runtime error \(\d+\) : (?P<therror>.+)|CUDA driver error: (?P<driver>.+)"
                       r"|Test CUDA failure [\w./-]{1,200}:\d+ '(?P<tests>[^']*)'"
                       r"|Test HIP failure [\w./-]{1,200}:\d+ '(?P<hip>[^']*)'")
# HIP's errors by name, as hipGetErrorString returned them before ROCm 5 (the enumerator's name: hipErrorInvalidDevice),
# with the words it returns since, which are CUDA's for the same error (hip_runtime_api.h: hipError_t keeps
# cudaError_t's numbers; HIP's hipGetErrorString): the device errors a first GPU call meets.
HIP_NAMES = {
    "hipErrorInvalidValue": "invalid argument",
    "hipErrorOutOfMemory": "out of memory",
    "hipErrorNotInitialized": "initialization error",
    "hipErrorInitializationError": "initialization error",
    "hipErrorNoDevice": "no ROCm-capable device is detected",
    "hipErrorInvalidDevice": "invalid device ordinal",
    "hipErrorNoBinaryForGpu": "no kernel image is available for execution on the device",
    "hipErrorPeerAccessUnsupported": "peer access is not supported between these two devices",
    "hipErrorIllegalAddress": "an illegal memory access was encountered",
    "hipErrorLaunchFailure": "unspecified launch failure",
    "hipErrorUnknown": "unknown error",
}


def _old_cuda(m: re.Match[str]) -> str:
    """The error's text from an older form: THError's " at file:line" and a closing full stop left off."""
    if m["hip"] is not None:  # HIP's name before ROCm 5, its words after
        return HIP_NAMES.get(m["hip"].strip(), m["hip"].strip())
    what = m["what"] or m["driver"] or m["therror"] or m["tests"]
    head, at, tail = what.rpartition(" at ")
    path, colon, line = tail.strip().rpartition(":")
    if m["therror"] and at and colon and path and " " not in path and line.isdigit():
        what = head
    return what.strip().rstrip(".")
STORE_FAIL = re.compile(then(
    r"TCPStore|\[c10d\]|c10d store|[Ss]ocket",
    r"Failed to recv|Broken pipe|Connection (?:refused|reset by peer)|(?:client socket )?has timed out|failed to connect"
    r"|has failed to (?:listen|bind)|Timed out after \d+ seconds waiting for (?:clients|workers)"
    r"|The connection to the C10d store has failed|cannot be retrieved"
    # c10d's client retrying a connect to port 0 (socket.cpp, SocketConnectOp: C10D_INFO "No socket on ({}, {}) is
    # listening yet, will retry.", every 30 s): no server listens on port 0, so the retry never ends (store_no_port)
    r"| on \([^(), ]{1,255}, 0\) is listening yet")
    # JAX's and TensorFlow's coordination service: the status of a process's registration with it names the RPC
    # (xla/tsl/distributed_runtime/rpc/coordination/grpc_coordination_client.cc); the catalogue's coordinator_unreachable
    + r"|/tensorflow\.CoordinationService/RegisterTask")
_SOCKET = re.compile(SOCKET_SAYS)
_LAUNCHER = re.compile(
    r"Received \S+ death signal|Sending process \d+ closing signal SIG\w+|has failed to shutdown the rendezvous"
    r"|Rendezvous(?:Timeout|Closed|Connection|GracefulExit)Error|attempts left; will restart worker group"
    r"|Restarting worker group"
    r"|The connection to the C10d store has failed"  # the c10d rendezvous backend's, alone (c10d_rendezvous_backend.py)
    r"|\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT|oom[_-]kill event|OOM Killed|OOMKilled|" + REMOTE_LAUNCH
)
# A Python logger's header before a traceback's line, as vLLM's logger prints it (vllm/logger.py: "%(levelname)s
# %(asctime)s %(filename)s:%(lineno)d] %(message)s", the date as "%m-%d %H:%M:%S"; "[file:line]" in later releases):
# "ERROR 02-12 02:14:01 worker_base.py:574] RuntimeError: ...". The exception's line is the rank's error as it stands.
PY_LOG_HEAD = re.compile(r"^(?:ERROR|WARNING|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d \[?[\w.-]{1,80}:\d{1,6}\] ")
# A glog header (c10's "[E1122 11:18:45.006097316 ProcessGroupNCCL.cpp:1895] "), left off a quoted line.
LOG_HEAD = re.compile(r"^\[?[EWIF]\d{4} [\d:.]+ +\d*\s*[^\]]*\]\s*")


# Lines of those sources that state no failure. The one WARN NCCL printed for what was none: before 2.18 it warned that
# libibverbs (InfiniBand's library) would not load (src/misc/ibvwrap.cu, 2.3.5) and went on over sockets; a
# maintainer: "the first one is to be ignored unless you want to use Infiniband/RoCE" (NVIDIA/nccl-tests#14); 2.18 made
# it an INFO line. CUDA's "driver shutting down" (cudaErrorCudartUnloading: a call "during process shut down, at a
# point in time after CUDA driver has been unloaded", the CUDA runtime API's error types) is the process's exit,
# which ProcessGroupNCCL's watchdog reports at INFO ("main process destroyed cuda before watchdog loop exited").
# The same of a network device's PCI path: NCCL goes on without it (src/transport/net_ib/init.cc; the socket
# transport's lookup, an INFO line since 2.4). A GPU's PCI path it cannot find, /sys/class/pci_bus/..., is fatal
# (ncclSystemError, src/os/linux.cc). NCCL 2.32's RMA socket transport warns at init that it needs GDRCopy where the
# host has none (transport/rma_socket.cc, ncclRmaSocketProxyInit) and the job runs on without it: recorded on 2 x H200
# with NCCL 2.32.3, every run of tests/data/gpu/nccl232 prints it, and those that did not hang completed.
NOT_FATAL = re.compile(r"Failed to open libibverbs\.so|driver shutting down"
                       r"|Could not find real path of /sys/class/(?:net|infiniband)/|rma_socket requires GDRCopy")
# The Python exception a kept line starts with (its type's name).
# A traceback's first line: Python's, and a c10::Error's backtrace under its message ("Exception raised from
# checkTimeout at ...", "frame #0: ..."): a new record (formats.HEADER).
TRACEBACK = re.compile(r"^(?:Traceback|Exception raised from|frame #)")
EXCEPTION_AT = re.compile(r"^(?P<name>[A-Za-z_][\w.]*(?:Error|Exception|Interrupt))\b")


def stating(text: str) -> Stating | None:
    """What a kept error's or clue's text states of its failure (see :class:`Stating`), or None where it states none
    of it; read once where the line is kept (evidence/parse.py), so that job/reasons.py words it from the fields."""
    cuda = nccl.CUDA_FAILURE.search(text) if "Cuda failure" in text else None
    call = nccl.CALL_FAILED.search(text) if "Call to " in text else None
    closed = nccl.PEER_CLOSED.search(text) if "closed by" in text else None
    result, system = nccl.results(text)
    enforce = cxx.ENFORCE.search(text) if "[enforce fail at " in text else None
    thrown = cxx.TERMINATE.search(text) if "terminate called" in text else None
    exception = EXCEPTION_AT.match(text)
    notice = NOT_FATAL.search(text) is not None
    agent = torchrun.agent_error(text)
    if not (notice or cuda or call or closed or result or enforce or thrown or exception or system or agent):
        return None
    return Stating(notice, cuda["what"] if cuda else None, call["call"] if call else None,
                   call["error"].strip() if call else "", closed["peer"] if closed else None, result,
                   enforce["at"] if enforce else None, thrown["type"] if thrown else None,
                   exception["name"] if exception else None, system, agent)


def fatal_signal(line: str) -> str | None:
    """The fatal signal a process reports it dies of on this line (``SIGBUS``), or None; SIGABRT is not one."""
    m = FATAL_SIGNAL.search(line)
    if m is None:
        return None
    number = m["caught"] or m["mpi"]
    if number:
        sig = signals.name(int(number))
    elif m["windows"] or m["nt"] or m["ntw"]:
        sig = signals.BY_WINDOWS_WORDS.get(m["windows"] or "") or signals.BY_NTSTATUS[int(m["nt"] or m["ntw"], 16)]
    else:
        sig = m["glog"] or m["gdb"] or signals.BY_WORDS[m["python"] or m["shell"] or _LOADER[m["loader"]]]
    return sig if sig in signals.FATAL else None


def killed(who: Who, line: str, loc: Loc) -> RankError | None:
    """A line (its prefixes left off) in which the process itself reports the fatal signal it dies of, as its error
    (a segfault or bus error in native code has no Python traceback), or None."""
    if (label := LABEL.match(line)) and not line.startswith("Signal: "):
        line = line[label.end():]
    return RankError(who, ErrorKind.KILLED, line[:300], loc) if fatal_signal(line) is not None else None


def exception(who: Who, line: str, loc: Loc) -> RankError | None:
    """A Python exception's line (its prefixes left off) as the rank's own error, or None (a cascade, no exception);
    ``terminate called after throwing`` too, where it is no c10 error's."""
    m = PY_ERROR.match(line)
    if m and not CASCADE.search(line):
        name, msg = m["name"], (m["message"] or "").strip()
        if "OutOfMemory" in name or "out of memory" in msg:
            kind = ErrorKind.OOM
        elif "CUDA error" in msg:
            kind = ErrorKind.CUDA
        elif CONNECTION.search(msg):
            kind = ErrorKind.CONNECTION
        else:
            kind = ErrorKind.EXCEPTION
        return RankError(who, kind, line, loc)
    if m is None and line.startswith("terminate called after throwing") and "c10::" not in line:
        return RankError(who, ErrorKind.EXCEPTION, line, loc)
    if m is None and (said := FRAMEWORK_FAILED.search(line)) is not None:
        return RankError(who, ErrorKind.EXCEPTION, line[said.start():][:300], loc)
    return None


def clues(who: Who, body: str, loc: Loc, clock: float | None) -> list[Clue]:
    """The clues of a line (its prefixes and header left off): a device-side assertion, or a CUDA error and a
    store's failure, the launcher's words or NCCL's sentences."""
    if m := _CUDA_ASSERT.search(body):
        return [Clue(who, "cuda_assert", f"Assertion `{m['condition']}` failed in {m['kernel']} "
                                         f"({m['file']}:{m['line']})", loc)]
    out = []
    if m := _CUDA_ERROR.search(body):
        out.append(Clue(who, "cuda", "CUDA error: " + m["what"].strip(), loc))
    elif m := _CUDA_OLD.search(body):
        out.append(Clue(who, "cuda", ("HIP error: " if m["hip"] is not None else "CUDA error: ") + _old_cuda(m), loc))
    elif CAUGHT_OOM.search(body) and not PY_ERROR.match(body):
        out.append(Clue(who, "cuda", body[:300], loc, clock))  # an out-of-memory a framework caught and printed
    if STORE_FAIL.search(body):
        out.append(Clue(who, "store", body[:300], loc, clock))
    elif _LAUNCHER.search(body):
        out.append(Clue(who, "launcher", body[:300], loc, clock))
    elif _SOCKET.search(body):
        out.append(Clue(who, "socket", body[:300], loc, clock))
    elif SAYS.search(body):
        out.append(Clue(who, "nccl", body[:300], loc, clock))
    elif SHUTDOWN.search(body):
        out.append(Clue(who, "shutdown", body[:300], loc, clock))  # another rank failed first
    elif m := TEARDOWN.search(body):
        out.append(Clue(who, "teardown", m[0], loc, clock))  # one sentence of it: the rest may be hard-wrapped
    elif SHM_FULL.search(body):
        out.append(Clue(who, "shm", body[:300], loc, clock))
    elif UCX_FRAME.search(body):
        out.append(Clue(who, "ucx", body[:300], loc, clock))
    elif completion_error(body) is not None or MLX5_CQE_DUMP in body:
        out.append(Clue(who, "verbs", body[:300], loc, clock))  # a work completion that failed (evidence/wcstatus.py)
    return out


_NOBODY = Who()


class Lines:
    """One input's error lines, each read on its own (the assembler strips the line's prefixes first)."""

    def feed(self, text: str, loc: Loc) -> Iterable[Read]:
        line = text.strip()
        if any(map(line.__contains__, SIGNAL_WORDS)) and (died := killed(_NOBODY, line, loc)) is not None:
            return (died,)
        said: list[Read] = []
        if any(map(line.__contains__, CLUE_WORDS)) and CLUE_GATE.search(line):
            said += clues(_NOBODY, LOG_HEAD.sub("", line), loc, glog(line))
        if line.startswith(("ERROR ", "WARNING ", "CRITICAL ")):
            line = PY_LOG_HEAD.sub("", line)
        if any(map(line.__contains__, ERROR_WORDS)) and (error := exception(_NOBODY, line, loc)) is not None:
            said.append(error)
        return said


_CAUGHT_OOM = ("| WARNING: ran out of memory with exception: CUDA out of memory. Tried to allocate 332.00 MiB (GPU 0; "
               "10.91 GiB total capacity; 9.33 GiB already allocated; 299.38 MiB free; 756.70 MiB cached);")
_THC = "THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=59 error=101 : invalid device ordinal"
_ENGINE_DEAD = ("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace "
                "(above) for the root cause.")
_SHM = ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory "
        "(shm).")
_DEVICE_ASSERT = ("/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1515: indexSelectSmallIndex: block: [0,0,0], "
                  "thread: [0,0,0] Assertion `srcIndex < srcSelectDimSize` failed.")
_GLOO_PAIR = "[<some path>/gloo/gloo/transport/tcp/pair.cc:761] connect [127.0.1.1]:60817: Connection refused"
FORMAT = Format(
    name="errors",
    words=tuple(dict.fromkeys((*ERROR_WORDS, *CLUE_WORDS, *SIGNAL_WORDS, *_OTHER_WORDS))),
    head_words=(*ERROR_WORDS, "Assertion `", "TCPStore", "[c10d]", "Rendezvous", "rendezvous", "death signal",
                "closing signal", "clients joined", "will restart worker group"),
    make=Lines,
    headers=(TRACEBACK,),
    patterns=(PY_ERROR, FATAL_SIGNAL, CLUE_GATE, FRAMEWORK_FAILED, SAYS, DEATH_NEWS, TEARDOWN, SHM_FULL, CAUGHT_OOM,
              _CUDA_ASSERT,
              _CUDA_ERROR, _CUDA_OLD, _SOCKET, EXCEPTION_AT),
    triggers=(Trigger('File "', '"'), Trigger("<module>", "<")),  # a traceback's frames (a framework's paths)
    wanted=('File "', "Error", "Exception"),
    logical=True,
    behind=(
        # an exception's message: a cascade's words, a connection's
        Behind((PY_ERROR,), (CASCADE, CONNECTION)),
        # a clue's body
        Behind((CLUE_GATE,), (STORE_FAIL, _LAUNCHER, UCX_FRAME, SHUTDOWN)),
        # the worker a launcher's clue says the agent stopped (torchrun.closing)
        Behind((_LAUNCHER,), (torchrun.CLOSING,)),
        # a kept error's or clue's text, read once (``stating``, ``storeclient.read``; also a logger's record's,
        # formats/loglevel.py)
        Behind((PY_ERROR, FATAL_SIGNAL, CLUE_GATE, FRAMEWORK_FAILED), (NOT_FATAL, cxx.ENFORCE, cxx.TERMINATE,
                                                                       torchrun.AGENT_ERROR, storeclient.WAIT,
                                                                       storeclient.ADDRESS, storeclient.REMOTE,
                                                                       storeclient.KEY, storeclient.ROOT,
                                                                       storeclient.WAITER)),
        # a traceback's frame: the frameworks its path names
        Behind(('File "',), (*(p for _, p in busy._FRAMEWORKS),)),
    ),
    # a logger's header (glog's, a Python logger's as vLLM prints it), taken off a kept line
    shapes=(LOG_HEAD, PY_LOG_HEAD),
    samples=(
        Sample("RuntimeError: CUDA error: an illegal memory access was encountered",
               "c10/cuda/CUDAException.h: C10_CUDA_CHECK's message, cudaGetErrorString(cudaErrorIllegalAddress)",
               (Clue(_NOBODY, "cuda", "CUDA error: an illegal memory access was encountered", AT),
                RankError(_NOBODY, ErrorKind.CUDA, "RuntimeError: CUDA error: an illegal memory access was "
                                                   "encountered", AT))),
        Sample("[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. Due to the asynchronous "
               "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
               "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, WorkNCCL::handleException's LOG(ERROR) (glog's "
               "header as PyTorch 1.x-2.0 printed it)",
               (Clue(_NOBODY, "teardown", "Some NCCL operations have failed or timed out", AT),)),
        Sample(_THC, "aten/src/THC/THCGeneral.cpp (PyTorch <= 1.10): THCudaCheck's message, "
                     "cudaGetErrorString(cudaErrorInvalidDevice), error 101; NVIDIA/semantic-segmentation#68",
               (Clue(_NOBODY, "cuda", "CUDA error: invalid device ordinal", AT),)),
        Sample("Fatal Python error: Segmentation fault", "CPython's faulthandler (Python/faulthandler.c)",
               (RankError(_NOBODY, ErrorKind.KILLED, "Fatal Python error: Segmentation fault", AT),)),
        Sample('Thread 787 "python3" received signal SIGBUS, Bus error.',
               "gdb/infrun.c, print_signal_received_reason: gdb stopped the process on the signal it dies of",
               (RankError(_NOBODY, ErrorKind.KILLED, 'Thread 787 "python3" received signal SIGBUS, Bus error.', AT),)),
        Sample("RPC call to sample_tokens timed out",
               "tests/data/public_threads/77-vllm-52504-cross-node-tp-serving-stalls.log:1",
               (RankError(_NOBODY, ErrorKind.EXCEPTION, "RPC call to sample_tokens timed out", AT),)),
        Sample("Failed to initialize any NET plugin",
               "tests/data/failures/net_ib/torchrun/df9702c1-a5fc-4c3c-b4ca-5165dc5f42fb_1f23zvsj/attempt_0/0/"
               "stderr.log:23",
               (Clue(_NOBODY, "nccl", "Failed to initialize any NET plugin", AT),)),
        Sample(_ENGINE_DEAD,
               "vllm/v1/engine/exceptions.py: EngineDeadError's message, raised in the front end when the "
               "engine's process died",
               (RankError(_NOBODY, ErrorKind.EXCEPTION, _ENGINE_DEAD, AT),)),
        Sample(_SHM,
               "tests/data/public_threads/267-reppoints-18-dist-train-worker-bus-error-in-container.log:1",
               (Clue(_NOBODY, "shm", _SHM, AT),)),
        Sample(_DEVICE_ASSERT,
               "tests/data/failures/device_assert/torchrun/f4e7ff4a-a253-4bae-8cb6-32bd22cd67b5__jfx821s/"
               "attempt_0/1/stderr.log:1",
               (Clue(_NOBODY, "cuda_assert", "Assertion `srcIndex < srcSelectDimSize` failed in indexSelectSmallIndex "
                                             "(Indexing.cu:1515)", AT),)),
        Sample(_CAUGHT_OOM,
               "fairseq's trainer (0.6: `| WARNING: ran out of memory with exception: {};\\n Skipping batch`) with the "
               "caching allocator's 1.x message (c10/cuda/CUDACachingAllocator.cpp)",
               (Clue(_NOBODY, "cuda", _CAUGHT_OOM, AT),)),
        Sample(_GLOO_PAIR,
               "tests/data/public_threads/253-gloo-223-two-node-cuda-benchmark-connection-refused.log:1",
               (Clue(_NOBODY, "socket", _GLOO_PAIR, AT),)),
    ),
)
