"""A fatal signal's native backtrace, frame by frame: the library (and symbol, where printed) of each frame.

A process that dies of SIGSEGV, SIGBUS or SIGILL in native code has no Python traceback; the handler that caught the
signal prints the native stack instead, innermost first, each frame in its printer's form:

* glibc's ``backtrace_symbols`` (``path(symbol+0xoff) [0xaddr]``, ``path(+0xoff) [0xaddr]`` without a symbol;
  ``backtrace_symbols_fd`` leaves out the space), which UCX's handler prints numbered when built without BFD
  (openucx/ucx src/ucs/debug/debug.c: ``"%2d  %s"``) and Open MPI's handler as ``[host:pid] [ 3] path(...)[0x...]``;
* UCX's own with BFD (debug.c: ``"%2d 0x%016lx %s()  %s:%u"``: number, address, function, source file and line;
  ``???`` where unknown), under ``==== backtrace (tid:%7d) ====``;
* glog's failure handler (google/glog src/signalhandler.cc, DumpStackFrameInfo: ``PC: @ 0x... symbol`` for the
  faulting address, then ``    @ 0x... symbol`` a frame, ``(unknown)`` where it cannot symbolize);
* gdb's ``bt`` (gdb/stack.c, print_frame: ``#N  0xADDR in FUNC (ARGS) from LIB``, ``#N  FUNC (ARGS) at FILE:LINE``;
  ``<signal handler called>`` where a handler ran), after it stopped on the signal or opened the core;
* CPython's faulthandler from 3.14 (Python/traceback.c, _Py_backtrace_symbols_fd, under "Current thread's C stack
  trace"): ``  Binary file "path", at symbol+0xoff [0xaddr]`` or ``  Binary file "path" [0xaddr]``.

Each frame is one ``native_frame`` fact: its library's family (``FAMILIES``: NCCL, its network plugin, CUDA,
rdma-core, UCX, PyTorch, Python, the system's C and C++ libraries; ``handler`` for the frames of the signal handler
itself and the kernel's return trampoline; else the library's file name), the library's file name and the symbol, as
``family|library|symbol``. job/crashsite.py finds the innermost frame that is neither the handler's nor the C
library's: the library the process crashed in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

# glibc's backtrace_symbols(_fd): a path, the symbol and offset in parentheses, the address in brackets.
GLIBC = re.compile(r"(?:^|\s)(?P<path>[^\s()\[\]]{1,400})\((?P<sym>[^()\s]{0,300}?)(?:[+-]0x[0-9a-fA-F]+)?"
                   r"(?:\) \[0x|\)\[0x)[0-9a-fA-F]+\]")
# UCX's BFD form: number, address, function with "()", two spaces, source file and line.
UCX = re.compile(r"(?:^|\s)\d{1,3} 0x[0-9a-fA-F]{8,16} (?P<sym>\S{1,300}?)\(\)  \S{0,400}:\d+")
# glog's: "PC: @" (the faulting address) or an indented "@", the address padded, then the symbol.
GLOG = re.compile(r"(?:PC: @ |    @ ) *0x[0-9a-fA-F]+ +(?P<sym>\S.{0,300})$")
# gdb's frame: its number, the address (left off for a frame with its source), the function and its arguments, then
# the source file and line or the library; the marker of a signal handler's frame.
GDB = re.compile(r"^#\d{1,4} +(?:0x[0-9a-fA-F]+ in )?(?P<sym>[^\s(]{1,300}) \(.{0,2000}?"
                 r"(?:\) at \S+:\d+|\) from (?P<path>\S+))$|^#\d{1,4} +(?P<marker><signal handler called>)")
# CPython's faulthandler's Python frames (Python/traceback.c, dump_frame: `  File "`, the file, `", line `, the line,
# ` in `, the function; no comma before "in", which a traceback's frame has), innermost first.
PYFRAME = re.compile(r'File "(?P<path>[^"]{1,400})", line (?P<line>\d{1,7}) in (?P<func>[\w<>.]{1,200})$')
# faulthandler's header of each thread's frames (Python/traceback.c, write_thread_id): the thread that caught the
# signal is "Current thread 0x...", the others "Thread 0x..." (all_threads, the default of faulthandler.enable).
THREAD = re.compile(r"^(?:(?P<current>Current thread 0x)|Thread 0x)[0-9a-fA-F]+(?: \[[^\]]{0,80}\])? \(most recent call first\):")
# CPython 3.14's faulthandler C stack.
PYTHON = re.compile(r'Binary file "(?P<path>[^"]{1,400})"(?:, at (?P<sym>[^\s+-]{0,300})[+-]0x[0-9a-fA-F]+)? \[0x')

# The libraries a frame may be in, by their file names' starts and their symbols' (mangled or demangled) starts.
FAMILIES: tuple[tuple[str, tuple[str, ...], re.Pattern[str] | None], ...] = (
    ("NCCL net plugin", ("libnccl-net",), re.compile(r"nccl_net_ofi|ncclNet|ncclIb[A-Z]|ncclSocket[A-Z]")),
    ("NCCL", ("libnccl", "librccl"), re.compile(r"p?nccl[A-Z]")),
    ("CUDA", ("libcuda.", "libcudart", "libnvidia-"), re.compile(r"cu(?:da)?[A-Z]")),
    ("rdma-core", ("libibverbs", "libmlx5", "libmlx4", "librdmacm", "libefa", "libhns", "libbnxt", "libirdma"),
     re.compile(r"ibv_|mlx5_|rdma_|efa_")),
    ("UCX", ("libucs", "libucp", "libuct", "libucm", "libucc"), re.compile(r"uc[sptmc]_")),
    ("PyTorch", ("libtorch", "libc10", "_C.cpython"), re.compile(r"c10::|at::|torch::|_ZN3c10|_ZN2at|_ZN5torch")),
    ("Python", ("libpython", "python"), re.compile(r"_?Py[A-Z]")),
    ("system", ("libc.so", "libc-", "libpthread", "libstdc++", "ld-linux", "libgcc_s", "libdl", "libm."), None),
)
# The signal handlers' own frames and the trampoline the kernel returns through (glibc's __restore_rt, which a
# symbol lookup names by its neighbour __sigaction or killpg): UCX's (debug.c, ucs_debug_backtrace_is_excluded's
# list), glog's, CPython's faulthandler's, gdb's marker and the arm64 vDSO's.
HANDLER = re.compile(r"ucs_handle_error|ucs_fatal_error|ucs_error_|ucs_debug_|ucs_log_|__ucs_|__sigaction|__restore_rt"
                     r"|killpg|<signal handler called>|FailureSignalHandler|HandleSignal|DumpStackFrameInfo"
                     r"|faulthandler_|_Py_DumpStack|_Py_DumpTraceback|__kernel_rt_sigreturn")
_ANYONE = Who()


def family(library: str, symbol: str) -> str:
    """The family of a frame: its handler's, a known library's by file name or symbol, else the file's name."""
    if symbol and HANDLER.search(symbol):
        return "handler"
    for name, files, symbols in FAMILIES:
        if library.startswith(files) or symbols is not None and symbol and symbols.match(symbol):
            return name
    return library or "unknown"


def frame(text: str) -> tuple[str, str] | None:
    """The library's file name and the symbol of a frame line, or None for no frame."""
    if ") [0x" in text or ")[0x" in text:
        m = GLIBC.search(text)
        return (m["path"].rpartition("/")[2], m["sym"]) if m else None
    if "()  " in text and (m := UCX.search(text)):
        return "", "" if m["sym"].strip("?") == "" else m["sym"]
    if "@ " in text and (m := GLOG.search(text)):
        sym = m["sym"].strip()
        return "", "" if sym == "(unknown)" else sym.removesuffix("()")
    if "#" in text and (m := GDB.match(text.lstrip())):
        sym = m["marker"] or ("" if m["sym"] == "??" else m["sym"])
        return (m["path"] or "").rpartition("/")[2], sym
    if 'Binary file "' in text and (m := PYTHON.search(text)):
        return m["path"].rpartition("/")[2], m["sym"] or ""
    return None


class Frames:
    """One input's native frames, each read on its own (job/crashsite.py orders them by line), and the Python frames
    of the thread faulthandler says caught the signal."""

    def __init__(self) -> None:
        self._current = False

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "hread 0x" in text and (t := THREAD.search(text)):
            self._current = t["current"] is not None
            return ()
        if self._current and '", line ' in text and (m := PYFRAME.search(text)):
            return (Fact(_ANYONE, "python_frame", f"{m['path']}:{m['line']}|{m['func']}", loc),)
        if (f := frame(text)) is None:
            return ()
        library, symbol = f
        return (Fact(_ANYONE, "native_frame", f"{family(library, symbol)}|{library}|{symbol}", loc),)


_T226 = "tests/data/public_threads/226-nccl-1996-ras-thread-segfault.log"
_T231 = "tests/data/public_threads/231-nccl-1538-roce-version-num-segfault.log"
FORMAT = Format(
    name="native backtrace",
    words=('File "', "Current thread 0x", "Thread 0x", ") [0x", ")[0x", "()  ", "    @ ", "PC: @ ", 'Binary file "',
           ") at ", ") from ", "<signal handler called>"),
    make=Frames,
    patterns=(GLIBC, UCX, GLOG, GDB, PYTHON, PYFRAME, THREAD),
    behind=(
        # a frame's symbol, once a frame pattern read it (its family, or a signal handler's)
        Behind((GLIBC, UCX, GLOG, GDB, PYTHON), (HANDLER, *(s for _, _, s in FAMILIES if s is not None))),
    ),
    samples=(
        Sample('  File "/root/.pyenv/versions/3.11.7/lib/python3.11/ctypes/__init__.py", line 519 in string_at',
               "tests/data/crash/torchrun/console.log:9",
               (Fact(_ANYONE, "python_frame", "/root/.pyenv/versions/3.11.7/lib/python3.11/ctypes/__init__.py:519|"
                                              "string_at", AT),),
               before=("Current thread 0x00007f3d44646b80 (most recent call first):",)),
        Sample(" 3  /opt/tiger/nccl/lib/libnccl.so(+0x120057) [0x7ff1c18c1057]", f"{_T226}:6",
               (Fact(_ANYONE, "native_frame", "NCCL|libnccl.so|", AT),)),
        Sample(" 0  /usr/lib/libucs.so.0(ucs_handle_error+0x2d4) [0x7fedc925c274]", f"{_T226}:3",
               (Fact(_ANYONE, "native_frame", "handler|libucs.so.0|ucs_handle_error", AT),)),
        Sample(" 1 0x0000000000050dc2 pncclRedOpDestroy()  ???:0", f"{_T231}:6",
               (Fact(_ANYONE, "native_frame", "NCCL||pncclRedOpDestroy", AT),)),
        Sample("[node1:02741] [ 4] /usr/lib/x86_64-linux-gnu/libibverbs.so.1(ibv_cmd_create_qp+0x1a)[0x7f3c2d1e4a8b]",
               "Open MPI's handler (opal/util/stacktrace.c: `[host:pid] [ n] ` before glibc's "
               "backtrace_symbols_fd, `path(symbol+0xoff)[0xaddr]`)",
               (Fact(_ANYONE, "native_frame", "rdma-core|libibverbs.so.1|ibv_cmd_create_qp", AT),)),
        Sample("PC: @     0x7f3c2d1e4a8b ncclProxyProgress()",
               "glog src/signalhandler.cc DumpStackFrameInfo: prefix, `@ `, the address padded to 18, the symbol",
               (Fact(_ANYONE, "native_frame", "NCCL||ncclProxyProgress", AT),)),
        Sample("    @     0x7f3c2d1e4a8b (unknown)",
               "glog src/signalhandler.cc DumpStackFrameInfo: a frame it cannot symbolize",
               (Fact(_ANYONE, "native_frame", "unknown||", AT),)),
        Sample("#1  0x00007ffff79d8197 in ?? () from /usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-"
               "gnu.so", "tests/data/crash/gdb/console.log:8",
               (Fact(_ANYONE, "native_frame", "_ctypes.cpython-311-x86_64-linux-gnu.so|_ctypes.cpython-311-x86_64-"
                                              "linux-gnu.so|", AT),)),
        Sample("#4  0x00007f2a1c0b2d1e in ncclProxyProgress (proxyState=0x55d1c2e4a8b0) at proxy.cc:912",
               "gdb/stack.c print_frame with symbols: `#N  0xADDR in FUNC (ARGS) at FILE:LINE`",
               (Fact(_ANYONE, "native_frame", "NCCL||ncclProxyProgress", AT),)),
        Sample("#3  <signal handler called>", "gdb/stack.c: the frame of a signal handler's return trampoline",
               (Fact(_ANYONE, "native_frame", "handler||<signal handler called>", AT),)),
        Sample('  Binary file "/usr/lib/x86_64-linux-gnu/libcuda.so.1", at +0x2a4b1c [0x7f3c2d1e4a8b]',
               "CPython 3.14 Python/traceback.c _Py_backtrace_symbols_fd: `Binary file \"path\", at sym+0xoff "
               "[0xaddr]`, the symbol empty where dladdr found none",
               (Fact(_ANYONE, "native_frame", "CUDA|libcuda.so.1|", AT),)),
    ),
)
