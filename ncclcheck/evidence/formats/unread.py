"""Lines that report an error in a form no other source reads: the last resort of issue 41 section 1.

Every source of this package reads its own fixed forms, and a job runs more libraries than any table names (a JAX
backend, UCX's transports, MS-MPI's report, a framework's own checks). Where nothing else failed, a report must not
say that nothing did while such a line stands in the inputs. A line is taken here where it holds an error word as a
word (``error``, ``failed``, ``failure``, ``exception``, ``fatal``, ``abort``, ``crash``, ``violation``, ``unable to``,
a signal's ``Segmentation fault``/``core dumped``, C++'s uncaught exception (libstdc++'s verbose terminate
handler: ``terminate called after throwing an instance of 'X'``, ``... without an active exception``), or an
exception class's name ending in ``Error``/``Exception`` raised or printed with its message, ``RuntimeError(`` or
``RuntimeError:``) and is not a record below the error level (a warning, an info or debug record:
formats/loglevel.py's levels, glog's ``W``/``I`` headers), a count of none (``0 errors``, ``no failures``,
``errors: 0``, ``nothing failed``), a traceback's or a backtrace's frame, a hedged hint, a member of a JSON document,
a row of a table drawn with bars, or a header of torchrun's failure table (``Root Cause (first observed failure):``,
``Failures:``; 1.9-1.10's ``Root Cause:``, ``Other Failures:``) behind any margin, even one formats/elastic.py cannot
read the table behind: the table's entries are its reports, its headers none.

The assembler (evidence/parse.py) keeps such lines only among the last :data:`TAIL` lines of their input, only
where no other source read them, and only in an input where no error of a known form was read: an error a process
went on from is followed by its ordinary output, a line a source reads says more through that source, and beside a
known failure the other error lines are its own (a launcher's table, a backtrace). job/unreadline.py quotes the first
of them where the rules found no failure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Who

# The error words, each as a word (an identifier such as error_file or on_failure holds none); an exception class's
# name (RuntimeError, ze_exception's C++ class excepted) by its ending.
ERRORISH = re.compile(
    r"(?<![\w-])(?:[Ee]rrors?|ERRORS?|[Ff]ailed|FAILED|[Ff]ailures?|FAILURE|[Ee]xceptions?|EXCEPTION|[Ff]atal|FATAL"
    r"|[Aa]bort(?:ed|ing)?|ABORT(?:ED)?|[Cc]rash(?:ed|es)?|[Vv]iolation|[Uu]nable to)(?![\w-])"
    r"|\b[A-Z]\w{0,60}(?:Error|Exception)(?=[:(])|Segmentation fault|core dumped"
    r"|\bterminate called (?:after throwing|without an active exception|recursively)"
)
# A record below the error level, or a count of none: no error stated.
NOT_ERROR = re.compile(
    r"\b(?:WARN(?:ING)?|[Ww]arn(?:ing)?s?|INFO|DEBUG|TRACE|NOTICE)\b|^\[?[IWD]\d{4} "
    r"|\b(?:[Nn]o|0|[Zz]ero|[Ww]ithout|[Ii]gnor(?:e|ed|ing))\s+(?:[\w-]+\s+)?(?:errors?|failures?|exceptions?)\b"
    r"|\b(?:errors?|failures?|failed)\s*[:=]\s*0\b"
    r"|\b(?:[Nn]othing|[Nn]one|[Nn]ever)\s+(?:[\w-]+\s+)?(?:failed|crashed|aborted)\b"
)
# A frame of a traceback or a native backtrace (c10's "Exception raised from F at file:N" heads one), a hedged hint
# ("might be reported at some other call"), a member of a JSON document ('"error": ...'), a row of a table drawn with
# bars (Ray Tune's trial table: "| Trial name | # failures | error file |"): words about an error, not the report of
# one.
FRAME = re.compile(r'^\s*(?:File "|frame #\d|#\d+ +0x|"[\w .-]{1,80}": |Exception raised from )'
                   r'|\b(?:might|may) (?:be|have)\b'
                   r'|^\s*\|(?:[^|]*\|){2,}\s*$')
# torchrun's failure table's headers (torch/distributed/elastic/multiprocessing/errors/__init__.py's message template),
# ending the line whatever stands before them.
TABLE_HEAD = re.compile(r"(?<![\w-])(?:Root Cause(?: \(first observed failure\))?|(?:Other )?Failures):\s*$")
WORDS = ("rror", "ROR", "ailed", "AILED", "ailure", "AILURE", "xception", "XCEPTION", "atal", "ATAL", "bort",
         "BORT", "rash", "iolation", "nable to", "Segmentation fault", "core dumped", "terminate called")
# How many of its input's last lines a line must stand among to be kept (evidence/parse.py).
TAIL = 25


def says_error(line: str) -> bool:
    """Whether this line (its prefixes left off) reports an error in words: an error word as a word, no lower level
    and no count of none, not a traceback's frame nor torchrun's table's header."""
    return ERRORISH.search(line) is not None and NOT_ERROR.search(line) is None and FRAME.match(line) is None \
        and TABLE_HEAD.search(line) is None


class Lines:
    """One input's error lines, each read on its own (the assembler keeps the unread ones near the input's end)."""

    def feed(self, text: str, loc: Loc) -> Iterable[Clue]:
        line = text.strip()
        return (Clue(_ANYONE, "unread", line[:300], loc),) if says_error(line) else ()


_ANYONE = Who()
_JAX = ("CUDA backend failed to initialize: jaxlib/cuda/versions_helpers.cc:90: operation gpuDeviceGetAttribute"
        "( &major, GPU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) failed: CUDA_ERROR_NOT_INITIALIZED")
_UCX = "rc_verbs_iface.c:67   send completion with error: local protection error"
_WIN = "CNTK: Caught Win32 exception 0xc0000005: Access violation."
FORMAT = Format(
    name="unread error lines",
    words=WORDS,
    make=Lines,
    patterns=(ERRORISH,),
    logical=True,
    behind=(
        # tested only on a line an error word was found on
        Behind((ERRORISH,), (NOT_ERROR, FRAME, TABLE_HEAD)),
    ),
    samples=(
        Sample(_JAX, "JAX's jax/_src/xla_bridge.py: the warning when a platform's backend fails to initialize "
                     "(f'{platform_name.upper()} backend failed to initialize: {err}'), the job going on on CPU",
               (Clue(_ANYONE, "unread", _JAX, AT),)),
        Sample(_UCX, "UCX's src/uct/ib/rc/verbs/rc_verbs_iface.c: a work completion's error status, in libibverbs' "
                     "words (ibv_wc_status_str)", (Clue(_ANYONE, "unread", _UCX, AT),)),
        Sample(_WIN, "a Windows program's handler of a structured exception (0xc0000005: STATUS_ACCESS_VIOLATION)",
               (Clue(_ANYONE, "unread", _WIN, AT),)),
    ),
)
