"""NCCL's own lines: its warnings, the errors PyTorch raises with its words, and the facts of its set-up.

NCCL prints ``host:pid:tid [cudaDev] NCCL WARN <message>`` (src/include/debug.h; before 2.3 ``[cudaDev]
include/socket.h:311 WARN <message>`` without the word NCCL), and its INFO lines name its version, bootstrap,
network and each communicator's size and GPU. PyTorch raises its result as "NCCL error: <reason>, NCCL version …"
(``NCCL error in: <file>:<line>, …`` before; ``NCCL Error 2: …`` before 1.8), nccl-tests as "Test NCCL failure
common.cu:874 '<reason>'", and ``Last error:`` introduces NCCL's own reason on the line under it (read by the
assembler, evidence/parse.py, which knows the line's process).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample, Trigger
from ncclcheck.evidence.types import Clue, ErrorKind, Fact, Loc, NcclWords, PeerGone, RankError, Read, Who

_NCCL_WARN = re.compile(r"NCCL WARN (?P<message>.*)")
# The file and line NCCL printed: a .cc of 2.5 on, a .cu of 2.3-2.4 (init.cu, bootstrap.cu), a header's own WARN
# (graph/xml.h, include/socket.h); 2.30 prints the function after the line ("socket.cc:485 (ncclSocketConnect) NCCL WARN").
_WARN_SOURCE = re.compile(r"(?<!\S)(?P<source>\S{1,300}\.(?:cc|cu|cpp|c|h|hpp):\d{1,7})(?: \([\w:~<>]{1,200}\))? NCCL WARN")
# NCCL before 2.3 printed "host:pid:tid [cudaDev] include/socket.h:311 WARN <message>", without the word NCCL; a
# line quoted without its "host:pid:tid [cudaDev]" header starts at the source file and line.
_OLD_WARN = re.compile(r"(?:\[\d+\] |^\s*)(?P<file>[\w/.]+\.(?:cc|cu|h|c)):\d+ WARN (?P<message>.*)")
# NCCL's own line header, "host:pid:tid [cudaDev] " (after a rank tag or NCCL's timestamp, if any).
# NCCL's debug header at a line's start (src/debug.cc: "host:pid:tid [dev] "): a new line of NCCL's (formats.HEADER).
HEADER = re.compile(r"^\S+:\d+:\d+ \[\d+\] ")
_NCCL_HEAD = re.compile(
    r"(?:^|[\]:] ?)(?P<host>[A-Za-z0-9][\w.-]*):(?P<pid>\d+):\d+ \[\d+\] (?=NCCL |[\w/.]+\.cc:\d+ NCCL )")
# The process of an NCCL line's header, ``host:pid:tid [dev] `` (src/include/debug.h), its host possibly elided by a
# paste (``:166:1226 [0] ``): the key that joins a line naming no rank to the rank its process's other lines state.
PROCESS = re.compile(r"(?:^|[\s\]:>])(?P<host>[A-Za-z0-9][\w.-]{0,120})?:(?P<pid>\d{1,9}):\d{1,9} \[\d{1,3}\] ")
# A connection that failed: closed, reset or refused, a remote process's exit (an error of the kind CONNECTION).
CONNECTION = re.compile(r"Connection (?:closed|reset|refused)|remote process exit|ncclRemoteError|Broken pipe", re.I)
# A peer that went away (a refused connect is not one: the peer was never reached), in every source's words: NCCL's
# socket layer ("Connection closed by remote peer host<port>", src/misc/socket.cc), the system's for a reset
# connection or a closed pipe (strerror: "Connection reset by peer", "Broken pipe", which NCCL, gloo and c10d quote),
# ncclGetErrorString(ncclRemoteError) since 2.13 ("remote process exited or there was a network error", src/init.cc)
# and the line PyTorch prints under it ("ncclRemoteError: A call failed possibly due to a network error or a remote
# process exiting prematurely.", torch/csrc/distributed/c10d/NCCLUtils.cpp), gloo's ("Connection closed by peer
# [host]:port", gloo/transport/tcp/pair.cc). One pattern for every rule that asks (job/ matches PeerGone).
PEER_GONE = re.compile(r"Connection (?:closed|reset)|closed by peer|remote process exit|ncclRemoteError|Broken pipe",
                       re.I)
# NCCL's ncclRemoteError result itself, in ncclGetErrorString's words or by the result's name.
REMOTE_ERROR = re.compile(r"remote process exited or there was a network error|ncclRemoteError")
# "NCCL error: <reason>, NCCL version ..." or the older "NCCL error in: <file>:<line>, <reason>, NCCL version ...";
# before PyTorch 1.8 "NCCL Error 2: <reason>", and nccl-tests' "Test NCCL failure common.cu:874 '<reason>'".
NCCL_ERROR = re.compile(r"(?:NCCL error|NCCL Error)(?: \d+)?(?: in: \S+,)?:?\s*(?P<reason>.*)"
                        r"|NCCL failure \S+:\d+ '(?P<quoted>[^']*)'")
# XLA's status for an NCCL call that failed (JAX's and TensorFlow's GPU collectives): "<file>:<line>: NCCL operation
# <expr> failed: <ncclGetErrorString>" (xla/service/gpu/nccl_utils.cc to 2023; TensorFlow's nccl_all_reduce_thunk.cc
# "TranslateStatus" before it), then with ". Last NCCL warning(error) log entry (may be unrelated) '<ncclGetLastError>'."
# after the reason (nccl_api.cc, nccl_errors.cc, 2024), the file and line dropped (xla/backends/gpu/collectives/
# nccl_errors.h, 2025), and ROCm's the same words with RCCL (rccl_errors.h). Where XLA could not load libnccl, its stub
# (xla/tsl/cuda/nccl_stub.cc) answers every call ncclSystemError and ncclGetErrorString "Unable to load NCCL library.
# Multi-GPU collectives will not work.": the reason is that sentence. The last warning "may be unrelated" (XLA's words),
# so it is not the reason. JAX adds "; current tracing scope: ..." after the status.
XLA = re.compile(r"\b[NR]CCL operation (?P<call>\S[^\n]{0,200}?) failed: (?P<reason>[^\n]{0,400}?)"
                 r"(?:\. Last [NR]CCL warning\(error\) log entry|;|\s*$)")
# PyTorch's own NCCL calls (torch/csrc/cuda/nccl.cpp, throw_nccl_error: "NCCL Error <n>: <ncclGetErrorString>"):
# ProcessGroupNCCL's all_to_all, gather, scatter, send and recv on a communicator it had already made (its set-up's
# check, C10D_NCCL_CHECK, reads "NCCL error in: <file>:<line>, ..." or "NCCL error: ..."), and torch.cuda.nccl's.
CALL_CHECK = re.compile(r"\bNCCL Error (?P<n>\d{1,2}): ")
# PyTorch's check (C10D_NCCL_CHECK: "NCCL error in: <__FILE__>:<__LINE__>, ...") of the calls its NCCLComm makes a
# communicator with, in the file that holds that class: create's ncclCommInitRank (ncclCommInitRankConfig in later releases)
# and split's ncclCommSplit, in torch/lib/c10d/NCCLUtils.hpp (1.x), torch/csrc/distributed/c10d/NCCLUtils.hpp, then
# NCCLUtils.cpp; its other checks there (abort, the async error's query) do not fail with a call's own result.
COMM_CHECK = re.compile(r"NCCL error in: (?P<file>\S{0,300}NCCLUtils\.(?:hpp|cpp)):\d{1,7},")
# ncclGetErrorString's words for a CUDA or a system call that failed inside NCCL (src/init.cc), as a framework that
# wraps NCCL prints them without PyTorch's "NCCL error" (TensorFlow: "ncclCommInitRank failed: unhandled cuda error";
# NVCaffe's glog CHECK: "Check failed: result == ncclSuccess (1 vs. 0)  unhandled cuda error"): the words are NCCL's
# alone, whoever prints them ("unhanled" is PyTorch 1.x's typo).
NCCL_RESULT = re.compile(r"unhan?dled cuda error|unhan?dled system error")
# The peer a transport's line names (src/misc/socket.cc, ncclSocketToString: "host<port>", an IPv6 address in
# brackets): "Connection closed by remote peer node-7<51450>", "NET/IB : Got completion from peer 10.3.0.7<39138>".
PEER = re.compile(r"peer \[?(?P<host>[\w.:-]+?)\]?<(?P<port>\d+)>")
# Its duplicate-GPU check (src/init.cc): 2.5.6-2.29's WARN "Duplicate GPU detected : rank <me> and rank <peer> both on
# CUDA device <busId>" (the bus id NCCL's integer in hex: %x in 2.5.6, %lx later), often pasted without its opening or
# with the bus id cut off, and 2.30's INFO "Detected ranks <a> and <b> sharing GPU with bus <busId> on this node"
# (ncclCheckMultiRank; its WARN "Multiple ranks detected using the same GPU" names no rank). Bounded, linear.
_PAIR = re.compile(r"rank (?P<a>\d{1,9}) and rank (?P<b>\d{1,9}) both on CUDA device\s?(?P<bus>[0-9a-fA-F]{1,16})?\b")
_SHARING = re.compile(r"Detected ranks (?P<a>\d{1,9}) and (?P<b>\d{1,9}) sharing GPU with bus (?P<bus>[0-9a-fA-F]{1,16})")
# What its lines state (job/reasons.py words each): its checks (src/include/checks.h) CUDACHECK's "Cuda failure
# '<string>'" (with the error's number since 2.19) and SYSCHECK's "Call to <name> failed: <strerror>", its socket
# layer's "Connection closed by remote peer <address>" (src/misc/socket.cc), and ncclGetErrorString's words (src/init.cc;
# "unhanled" is PyTorch 1.x's typo), each the ncclResult_t it names, in this order.
CUDA_FAILURE = re.compile(r"Cuda failure (?:\d+ )?'(?P<what>[^']*)'?")
CALL_FAILED = re.compile(r"Call to (?P<call>\w+)(?: from \S+)? failed(?: with error)?\s*:?\s*(?P<error>[^,]*)")
PEER_CLOSED = re.compile(r"Connection closed by (?:remote )?peer\s*(?P<peer>\S*)")
RESULTS = ((("unhandled cuda error",), "ncclUnhandledCudaError"),
           (("unhandled system error", "unhanled system error"), "ncclSystemError"),
           (("internal error",), "ncclInternalError"), (("invalid argument",), "ncclInvalidArgument"),
           (("invalid usage",), "ncclInvalidUsage"), (("remote process exited", "network error"), "ncclRemoteError"))
# The same words in any case, for a line that is not ASCII (where lower() and a case-blind match may differ).
_RESULT_ANY_CASE = tuple((re.compile("|".join(map(re.escape, words)), re.IGNORECASE), name) for words, name in RESULTS)


# ncclSystemError however a line names it, wherever it stands among other results: ncclGetErrorString's words
# (:data:`RESULTS`, PyTorch 1.x's "unhanled" among them) or the result's own name, which PyTorch prints on the line
# under its "NCCL error" (torch/csrc/distributed/c10d/NCCLUtils.hpp, getNcclErrorDetailStr: "ncclSystemError: System
# call (e.g. socket, malloc) or external library call failed or device error."). The catalogue's nccl_system_error.
SYSTEM_WORDS = (*next(words for words, name in RESULTS if name == "ncclSystemError"), "ncclsystemerror")
_SYSTEM_ANY_CASE = re.compile("|".join(map(re.escape, SYSTEM_WORDS)), re.IGNORECASE)


def results(text: str) -> tuple[str | None, bool]:
    """The ncclResult_t whose words the text holds, the first of :data:`RESULTS` in order, or None; and whether it
    names ncclSystemError (:data:`SYSTEM_WORDS`) anywhere. In any case: an ASCII line through one lower(), another
    through case-blind patterns built from the same words (where lower() and a case-blind match may differ)."""
    if text.isascii():
        low = text.lower()
        return (next((name for words, name in RESULTS if any(w in low for w in words)), None),
                any(w in low for w in SYSTEM_WORDS))
    return (next((name for p, name in _RESULT_ANY_CASE if p.search(text)), None),
            _SYSTEM_ANY_CASE.search(text) is not None)


ERROR_WORDS = ("NCCL error", "NCCL Error", "NCCL failure", "dled cuda error", "dled system error", "CCL operation ")
LAST_ERROR = re.compile(r"(?:^|[\s:])Last error:\s*(?P<text>.*)$")
# NCCL's own sentences for a failed set-up or transport, wherever they stand (a paste often keeps only them).
SAYS = re.compile(
    r"Error while creating shared memory segment|Error while attaching to shared memory segment"
    r"|no socket interface found|neither AF_INET|Failed to initialize any NET plugin|Got completion from peer"
    r"|peer access is not supported|Call to \w+ failed"
    # NVLS's multicast bind (src/transport/nvls.cc, 2.27 on), by its fixed words, with or without its size
    r"|Failed to bind NVLink SHARP \(NVLS\) Multicast memory[^\n]{0,100}?CUDA error"
    # its duplicate-GPU check (src/init.cc): the sentence with or without its opening, and 2.30's form
    r"|Duplicate GPU detected|rank \d{1,9} and rank \d{1,9} both on CUDA device|Multiple ranks detected using the same GPU"
    # its kernels' set-up (src/enqueue.cc, ncclInitKernelsForDevice): they need more shared memory than the GPU allows
    # one kernel (INFO in 2.25, WARN with ncclSystemError since), a release built before the GPU's architecture
    r"|ncclMaxSharedMem \d{1,9} exceeds device/fn maxSharedMem"
)
FACTS = (  # (key, a word the line must hold, pattern): the word is a cheap test before the pattern
    ("nccl_version", "NCCL version", re.compile(r"NCCL version:? (?P<value>\d+\.\d+\.\d+)")),
    ("bootstrap", "Bootstrap", re.compile(r"Bootstrap\s*:\s*Using\s+(?P<value>.*)")),
    ("net_ib", "NET/IB", re.compile(r"NET/IB\s*:\s*(?P<value>Using\s+.*|No device found\.?)")),
    ("net_socket", "NET/Socket", re.compile(r"NET/Socket\s*:\s*Using\s+(?P<value>.*)")),
    ("network", "Using network", re.compile(r"NCCL INFO Using network (?P<value>\S+)")),
    # A communicator's size: the world's, or a sub-group's (the world is at least that large).
    ("nccl_nranks", "nranks", re.compile(r"NCCL INFO comm 0x[0-9a-f]+ rank \d+ nranks (?P<value>\d+) ")),
    ("bus_id", "busId", re.compile(r"cudaDev \d+ (?:nvmlDev \d+ )?busId (?P<value>[0-9a-fA-F]+)")),  # the rank's GPU
)


# Words one of which its INFO facts and its warnings hold (the assembler's cheap test before them; a line holding
# one is also read for the host and PID of NCCL's header).
FACT_WORDS = ("NCCL version", "Bootstrap", "NET/", "Using network", "nranks", "NCCL WARN")


def pci(bus_id: str) -> str:
    """NCCL's integer bus id (hex) as a PCI address: domain, bus, device and function (src/misc/utils.cc,
    int64ToBusId): 53000 is 0000:53:00.0."""
    n = int(bus_id, 16)
    return f"{n >> 20:04x}:{(n & 0xff000) >> 12:02x}:{(n & 0xff0) >> 4:02x}.{n & 0xf:x}"


def words(text: str) -> NcclWords | None:
    """NCCL's facts on a kept error's or clue's text (the peer its transport names, the two ranks its duplicate-GPU
    check names), or None where it states none; read once, where the assembler keeps the line (evidence/parse.py),
    so that job/ matches on the fields."""
    peer = PEER.search(text) if "peer " in text else None
    pair = None
    if "both on CUDA device" in text:
        pair = _PAIR.search(text)
    if pair is None and "sharing GPU with bus" in text:
        pair = _SHARING.search(text)
    if peer is None and pair is None:
        return None
    return NcclWords(peer["host"] if peer else None, int(peer["port"]) if peer else None,
                     (int(pair["a"]), int(pair["b"])) if pair else None, pci(pair["bus"]) if pair and pair["bus"] else None)


def gone(text: str) -> PeerGone | None:
    """A kept error's, clue's or work's word that a peer went away (:data:`PEER_GONE`), from that word to the end of
    its sentence, or None; read once where the line is kept, so that job/ matches on the field."""
    m = PEER_GONE.search(text)
    if m is None:
        return None
    return PeerGone(text[m.start():].split(". ")[0].rstrip(".")[:120], REMOTE_ERROR.search(text) is not None)


def process_of(text: str) -> tuple[str, int] | None:
    """The host (empty where the line elides it) and PID of an NCCL line's header, or None."""
    m = PROCESS.search(text, 0, 300)
    return (m["host"] or "", int(m["pid"])) if m else None


def facts(who: Who, text: str, loc: Loc) -> list[Fact]:
    """What an INFO line says of NCCL's set-up: its version, bootstrap, network, a communicator's size, the GPU."""
    return [Fact(who, key, m["value"].strip(), loc) for key, word, pattern in FACTS
            if word in text and (m := pattern.search(text))]


def process(who: Who, text: str, loc: Loc) -> list[Fact]:
    """Where a rank ran (the host and PID of NCCL's line header), for a peer's address to name it."""
    if who.rank is not None and " NCCL " in text and (head := _NCCL_HEAD.search(text, 0, 200)):
        return [Fact(who, "host", head["host"], loc), Fact(who, "pid", head["pid"], loc)]
    return []


def warning(who: Who, text: str, loc: Loc) -> list[Read] | None:
    """An NCCL WARN line's message as the rank's error (a peer that went away: a connection failure), or None."""
    if "NCCL WARN" in text and (warn := _NCCL_WARN.search(text)):
        msg = warn["message"].strip()
        said: list[Read] = [RankError(who, ErrorKind.CONNECTION if CONNECTION.search(msg) else ErrorKind.NCCL_WARN,
                                      msg, loc)]
        if (src := _WARN_SOURCE.search(text)) is not None:
            # the file that printed it is the layer under NCCL that failed (job/layers.py)
            said.append(Fact(who, "nccl_warn_file", src["source"].rpartition(":")[0], loc))
            if "nvls" in text:
                # NVLink SHARP's set-up fails with a bare CUDA error: only the source file says it was NVLS
                said.append(Clue(who, "nccl", f"{src['source']} NCCL WARN {msg}", loc))
        return said
    return None


def old_warning(who: Who, text: str, loc: Loc) -> list[Read] | None:
    """An NCCL WARN line as NCCL before 2.3 printed it, with the file that printed it, or None."""
    if " WARN " in text and (warn := _OLD_WARN.search(text)):
        msg = warn["message"].strip()
        return [RankError(who, ErrorKind.CONNECTION if CONNECTION.search(msg) else ErrorKind.NCCL_WARN, msg, loc),
                Fact(who, "nccl_warn_file", warn["file"], loc)]
    return None


def call_check(who: Who, text: str, loc: Loc) -> list[Fact]:
    """An NCCL error in the words of PyTorch's own NCCL calls (:data:`CALL_CHECK`), as an ``nccl_call_check`` fact
    (job/callphase.py: with a traceback through all_to_all, gather, scatter, send or recv, that call failed)."""
    return [Fact(who, "nccl_call_check", m["n"], loc)] if "NCCL Error " in text and (m := CALL_CHECK.search(text)) \
        else []


def comm_check(who: Who, text: str, loc: Loc) -> list[Fact]:
    """An NCCL error PyTorch raised where its NCCLComm makes a communicator (:data:`COMM_CHECK`), as an
    ``nccl_comm_check`` fact valued with the file (job/worldview.py: the communicator's creation refused an argument)."""
    return [Fact(who, "nccl_comm_check", m["file"], loc)] if "NCCLUtils." in text and (m := COMM_CHECK.search(text)) \
        else []


def error(who: Who, text: str, loc: Loc) -> RankError | None:
    """An "NCCL error: <reason>" raised on this rank (not on a named work), or None."""
    if "WorkNCCL(" in text:
        return None
    if "CCL operation " in text and (x := XLA.search(text)) and x["reason"].strip():
        # NCCL's result in its words, as PyTorch's; a reason in other words (XLA's stub: no NCCL ran) as the line
        # words it
        reason = x["reason"].strip()
        message = "NCCL error: " + reason if results(reason)[0] else f"NCCL operation {x['call']} failed: {reason}"
        return RankError(who, ErrorKind.CONNECTION if CONNECTION.search(message) else ErrorKind.NCCL_ERROR, message,
                         loc)
    m = NCCL_ERROR.search(text)
    if not m:
        bare = NCCL_RESULT.search(text)
        return RankError(who, ErrorKind.NCCL_ERROR, "NCCL error: " + text[bare.start():].strip(), loc) if bare else None
    message = "NCCL error: " + (m["reason"] if m["reason"] is not None else m["quoted"]).strip()
    return RankError(who, ErrorKind.CONNECTION if CONNECTION.search(message) else ErrorKind.NCCL_ERROR, message, loc)


DETAIL_WITHIN = 200  # the line under "Last error:" is its process's next line; other ranks' lines may come between


class LastErrors:
    """NCCL's "Last error:" lines whose reason is on their process's next line, by process, and whether lines were
    left out of the selection since (the one under it may be among them). ``header``: a line that begins a new record
    of any source (``formats.HEADER``), which is no reason."""

    def __init__(self, header: re.Pattern[str]) -> None:
        self._header = header
        self._waiting: dict[Who, tuple[Loc, bool]] = {}
        self._prev = 0

    def line(self, lineno: int) -> None:
        """A physical line's number: a gap since the last one may have left the reason out."""
        if self._waiting and lineno != self._prev + 1:
            self._waiting = {w: (loc, True) for w, (loc, _) in self._waiting.items()}
        self._prev = lineno

    @property
    def waiting(self) -> bool:
        """Whether a "Last error:" line waits for its reason (:meth:`reason` has nothing to say otherwise)."""
        return bool(self._waiting)

    def wait(self, who: Who, loc: Loc) -> None:
        """A "Last error:" line with nothing after it: its reason is on its process's next line."""
        self._waiting[who] = (loc, False)

    def reason(self, who: Who, lineno: int, body: Callable[[], str]) -> list[Clue]:
        """The reason a logical line of ``who`` gives (``body``: its text without prefixes): NCCL's, or empty when
        the next record starts at once. A line naming no process right under the wait is its continuation."""
        if not self._waiting:
            return []
        mine = who if who in self._waiting else next(
            (w for w, (at, _) in self._waiting.items() if who.rank is None and at.line == lineno - 1), None)
        if mine is None:
            return []
        loc, gap = self._waiting.pop(mine)
        if lineno - loc.line > DETAIL_WITHIN:
            return []
        text = body()
        empty = not text or bool(self._header.search(text)) or text.startswith(("Exception raised from", "Traceback"))
        if empty and gap:
            return []  # lines were left out since: the one under it may be among them; say nothing rather than "empty"
        return [Clue(mine, "last_error", "" if empty else text, loc if empty else Loc(loc.file, lineno))]


_NOBODY = Who()


class Lines:
    """One input's NCCL lines (each read on its own; the assembler counts an error once per rank)."""

    def feed(self, text: str, loc: Loc) -> Iterable[Read]:
        said: list[Read] = [*facts(_NOBODY, text, loc)]
        if (warn := warning(_NOBODY, text, loc)) is not None:
            return said + warn
        if (old := old_warning(_NOBODY, text, loc)) is not None:
            return [*said, *old]
        if any(map(text.__contains__, ERROR_WORDS)) and (err := error(_NOBODY, text, loc)) is not None:
            return [*said, err]
        return said


_NET_SOCKET = "vm:770:770 [0] NCCL INFO NET/Socket : Using [0]eth0:192.0.2.2<0>"
_ABORTED_COMM = "vm:1435:1931 [0] NCCL INFO comm 0x496cc2a0 rank 0 nranks 2 cudaDev 0 busId 60 - Abort COMPLETE"
FORMAT = Format(
    name="NCCL",
    words=ERROR_WORDS,
    # its warnings, its version (2.21.5+cuda12.4), the interface it uses (eth0:10.0.0.1<0>)
    triggers=(Trigger("WARN", "W"), Trigger("+cuda", "+"), Trigger(r"<\d{1,3}>", "<", pattern=True)),
    wanted=("NCCL WARN", "NCCL version", "Using"),
    head_words=("NCCL version", "Bootstrap", "NET/", "Using network", "nranks", "NCCL WARN", "Last error"),
    make=Lines,
    headers=(HEADER,),
    patterns=(NCCL_ERROR, NCCL_RESULT, XLA, _NCCL_WARN, _WARN_SOURCE, LAST_ERROR,
              *(p for _, w, p in FACTS if w != "busId")),
    logical=True,
    behind=(
        # NCCL before 2.3's warning, behind its trigger
        Behind(("WARN",), (_OLD_WARN,)),
        # the process of a warning naming no rank, and of a connection's line (evidence/parse.py joins the two)
        Behind((_NCCL_WARN,), (PROCESS,)),
        # a GPU's bus id, tested for "busId" on a set-up line (tests/test_keep.py's UNKEPT)
        Behind(("busId",), (*(p for _, w, p in FACTS if w == "busId"),)),
        # an error's or a warning's message, and every kept error's and clue's text (``words``, ``gone``,
        # ``results``: formats/errors.py, loglevel.py)
        Behind((NCCL_ERROR, NCCL_RESULT, XLA, _NCCL_WARN, _OLD_WARN),
               (CALL_CHECK, COMM_CHECK, CONNECTION, PEER_GONE, REMOTE_ERROR, PEER, _PAIR, _SHARING, CUDA_FAILURE,
                CALL_FAILED, PEER_CLOSED, *(p for p, _ in _RESULT_ANY_CASE), _SYSTEM_ANY_CASE)),
    ),
    # the host and PID of NCCL's header, read on a set-up line of any source (a fact word, then " NCCL ")
    shapes=(_NCCL_HEAD,),
    samples=(
        Sample("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
               "remote process exited or there was a network error, NCCL version 2.20.5",
               "torch/csrc/distributed/c10d/NCCLUtils.hpp (2.3): C10D_NCCL_CHECK's message for ncclRemoteError",
               (Fact(_NOBODY, "nccl_version", "2.20.5", AT),
                RankError(_NOBODY, ErrorKind.CONNECTION, "NCCL error: remote process exited or there was a network "
                          "error, NCCL version 2.20.5", AT))),
        Sample("RuntimeError: NCCL error in: /opt/conda/conda-bld/pytorch_1595629403081/work/torch/lib/c10d/../c10d/"
               "NCCLUtils.hpp:82, invalid argument, NCCL version 2.4.8",
               "tests/data/public_threads/317-lightning-3029-torchelastic-two-node-ddp-broadcast-invalid-argument.log:4",
               (Fact(_NOBODY, "nccl_version", "2.4.8", AT),
                RankError(_NOBODY, ErrorKind.NCCL_ERROR, "NCCL error: invalid argument, NCCL version 2.4.8", AT))),
        Sample("Test NCCL failure common.cu:874 'unhandled system error (run with NCCL_DEBUG=INFO for details)'",
               "nccl-tests src/common.h: NCCLCHECK's message",
               (RankError(_NOBODY, ErrorKind.NCCL_ERROR, "NCCL error: unhandled system error (run with "
                          "NCCL_DEBUG=INFO for details)", AT),)),
        Sample("UnknownError (see above for traceback): ncclCommInitRank failed: unhandled cuda error",
               "TensorFlow (Horovod 0.x) wrapping ncclGetErrorString(ncclUnhandledCudaError), horovod/horovod#108",
               (RankError(_NOBODY, ErrorKind.NCCL_ERROR, "NCCL error: unhandled cuda error", AT),)),
        Sample("external/xla/xla/service/gpu/nccl_utils.cc:133: NCCL operation ncclGetUniqueId(&id) failed: Unable to "
               "load NCCL library. Multi-GPU collectives will not work.;",
               "tests/data/public_threads/328-jax-18391-all-reduce-fails-after-upgrade.log:2 (XLA's stub's reason)",
               (RankError(_NOBODY, ErrorKind.NCCL_ERROR, "NCCL operation ncclGetUniqueId(&id) failed: Unable to "
                          "load NCCL library. Multi-GPU collectives will not work.", AT),)),
        Sample("NCCL WARN Cuda failure 'out of memory'",
               "tests/data/public_threads/58-nccl-295-tf-resnet-timeout.log:1",
               (RankError(_NOBODY, ErrorKind.NCCL_WARN, "Cuda failure 'out of memory'", AT),)),
        Sample("graph/topo.h:230 NCCL WARN Could not find NET with id 0",
               "tests/data/public_threads/42-nemo-13996-multinode-sft-fails.log:5",
               (RankError(_NOBODY, ErrorKind.NCCL_WARN, "Could not find NET with id 0", AT),
                Fact(_NOBODY, "nccl_warn_file", "graph/topo.h", AT))),
        Sample("vm:1007:1007 [1] NCCL INFO Bootstrap: Using lo:127.0.0.1<0>",
               "tests/data/gpu/mechanisms/ifname_split/torchrun/run/attempt_0/1/stdout.log:4",
               (Fact(_NOBODY, "bootstrap", "lo:127.0.0.1<0>", AT),)),
        Sample("vm:770:770 [0] NCCL INFO NET/IB : No device found.",
               "tests/data/gpu/colltrace/mismatch/console.log:14",
               (Fact(_NOBODY, "net_ib", "No device found.", AT),)),
        Sample(_NET_SOCKET,
               "tests/data/gpu/colltrace/mismatch/console.log:17",
               (Fact(_NOBODY, "net_socket", "[0]eth0:192.0.2.2<0>", AT),)),
        Sample("::16674:17023 [0] NCCL INFO Using network IB",
               "tests/data/public_threads/131-azhpc-327-xml-import-channel-dev-not-found.log:7",
               (Fact(_NOBODY, "network", "IB", AT),)),
        Sample(_ABORTED_COMM,
               "tests/data/failures/order_cycle_info/torchrun/0ef4676f-9515-4a02-9ab7-2b91a4ce3d84_b0nuz3r4/"
               "attempt_0/0/stdout.log:227",
               (Fact(_NOBODY, "nccl_nranks", "2", AT), Fact(_NOBODY, "bus_id", "60", AT))),
        # PyTorch's message under NCCL's error (getNcclErrorDetailStr: "\nLast error:\n" and ncclGetLastError's
        # text): its reason, on the next line, is the assembler's to read (``LastErrors``), not this reader's
        Sample("Last error:", "tests/data/verbs/reg_mr_enomem.log:5",
               (Fact(_NOBODY, "nccl_version", "2.21.5", AT),
                RankError(_NOBODY, ErrorKind.NCCL_ERROR, "NCCL error: unhandled system error (run with "
                          "NCCL_DEBUG=INFO for details), NCCL version 2.21.5", AT)),
               before=("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                       "ProcessGroupNCCL.cpp:2027, unhandled system error (run with NCCL_DEBUG=INFO for details), "
                       "NCCL version 2.21.5",
                       "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
                       "device error.")),
    ),
)
