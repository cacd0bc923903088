"""The records a program logs at an error level, through the logging library it uses, and C's failed assertions.

A program that gives up usually says why through its logger before it exits, and each common logging library
writes a record's level in a fixed place of its default (or its documented common) format. Read at levels ERROR,
CRITICAL and FATAL only, the library named from the shape:

* Python's logging: ``logging.BASIC_FORMAT`` is ``%(levelname)s:%(name)s:%(message)s`` (``ERROR:trainer:...``,
  Lib/logging/__init__.py); the logging HOWTO's formatter ``%(asctime)s - %(name)s - %(levelname)s - %(message)s``
  (`` - ERROR - ``); vLLM's ``%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s`` (vllm/logger.py,
  whose exception lines errors.PY_LOG_HEAD reads); ``[%(levelname)s]`` in brackets, as DeepSpeed's and many others'.
* loguru's default format ``{time} | {level: <8} | {name}:{function}:{line} - {message}`` (loguru/_defaults.py).
* spdlog's default pattern ``[%Y-%m-%d %H:%M:%S.%e] [%n] [%l] %v``, its level names in lower case (``[error]``,
  ``[critical]``; spdlog/common.h, SPDLOG_LEVEL_NAMES).
* Rust's env_logger (``[2017-11-09T02:12:24Z ERROR main] msg``, its default format) and tracing-subscriber's fmt
  (``2022-02-15T18:40:14.289898Z ERROR target: msg``); Go's log/slog TextHandler (``time=... level=ERROR msg=...``).
* glog, absl and Go's klog (``Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg``; glog 0.6.0 on puts the year before
  the month, ``Lyyyymmdd``, its flag log_year_in_prefix true by default: src/logging.cc, LogMessage::Init): read at
  FATAL behind its CHECK's words only (``F1128 ... file.cc:12] Check failed: x == y``, glog's logging.h): LOG(FATAL)
  aborts the process, after its ``*** Check failure stack trace: ***``. An
  ``E`` line of theirs holds no literal word the block reader could keep it by; c10's own are read by their sources.

And glibc's ``assert``: ``prog: file.c:12: func: Assertion `x' failed.`` (assert/assert.c, __assert_fail_base),
printed before it aborts the process.

A logged error is no failure where the process logged on after it: a retry that succeeded writes its error, then
ordinary records. The assembler (evidence/parse.py) withdraws an error record once the same process writes a record
below the error level (:data:`BELOW`) or a count through its loop; what is left is the last error a process logged
before its end. A line a more specific source reads (an exception under vLLM's header, torchrun's own report) is
that source's, not this one's (evidence/parse.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats import errors, nccl, storeclient
from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Read, Who

RECORD = re.compile(
    r"^(?P<py>ERROR|CRITICAL):(?P<logger>[\w.<>-]{1,200}):(?P<py_msg>.*)"
    r"|^(?P<vllm>ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d \[?[\w.-]{1,80}:\d{1,6}\] (?P<vllm_msg>.*)"
    r"| - (?P<dash>ERROR|CRITICAL) - (?P<dash_msg>.*)"
    r"|\| (?P<loguru>ERROR|CRITICAL) *\| (?P<loguru_msg>.*)"
    r"|\[(?P<bracket>ERROR|CRITICAL|FATAL)\] (?P<bracket_msg>.*)"
    r"|\[error\] (?P<spdlog_msg>.*)"
    r"|\[critical\] (?P<spdlog_c_msg>.*)"
    r"|^\[?\d{4}-\d\d-\d\dT[\d:.]{1,30}(?:Z|[+-]\d\d:?\d\d)? (?P<rust>ERROR) (?P<rust_msg>.*)"
    r"|\blevel=(?P<slog>ERROR) (?P<slog_msg>.*)"
    r"|^(?P<glog>F)(?:\d{4})?\d{4} [\d:.]{1,30} +\d{1,10} [\w.-]{1,200}:\d{1,7}\] (?P<glog_msg>Check failed: .*)"
)
# The library each alternative is, by its level's group.
_LIBRARY = {"py": "Python's logging", "vllm": "vLLM's logger (Python's logging)", "dash": "Python's logging",
            "loguru": "loguru", "bracket": "a logger", "spdlog": "spdlog", "spdlog_c": "spdlog",
            "rust": "Rust's env_logger or tracing", "slog": "Go's log/slog", "glog": "glog (LOG(FATAL) of a CHECK)"}
# The same libraries' records below the error level: the process logging on after an error.
BELOW = re.compile(
    r"^(?:INFO|WARNING|DEBUG):[\w.<>-]{1,200}:|^(?:INFO|WARNING|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d "
    r"| - (?:INFO|WARNING|DEBUG) - |\| (?:INFO|WARNING|DEBUG|SUCCESS) *\| |\[(?:INFO|WARNING|DEBUG|info|warning|debug)\] "
    r"|^\[?\d{4}-\d\d-\d\dT[\d:.]{1,30}(?:Z|[+-]\d\d:?\d\d)? +(?:INFO|WARN|DEBUG|TRACE) |\blevel=(?:INFO|WARN|DEBUG) "
    r"|^[IW](?:\d{4})?\d{4} [\d:.]{1,30} +\d{1,10} [\w.-]{1,200}:\d{1,7}\] "
)
# glibc's assert() (assert/assert.c: "%s%s%s:%u: %s%sAssertion `%s' failed."; a straight quote opens it in some builds).
# glog's header at a line's start ("E1125 15:15:55.506000 1671 api.py:1002] "): a new record (formats.HEADER).
GLOG_LINE = re.compile(r"^[EWIF]\d{4} ")
ASSERT = re.compile(r": Assertion [`'](?P<cond>(?:(?!Assertion |' failed\.)[^\n]){1,400})' failed\.")


def assertion_place(line: str) -> tuple[str, str] | None:
    """The function and the ``file:line`` a failed assertion's line names before its condition, or None."""
    m = ASSERT.search(line)
    if m is None:
        return None
    head, _, func = line[:m.start()].rpartition(": ")
    place = head.rpartition(": ")[2]
    return (func, place) if func and ":" in place else None


WORDS = ("ERROR", "CRITICAL", "FATAL", "[error]", "[critical]", "Check failed: ", "Assertion ")
# Words one of which a record below the error level holds (tested only while an error of its process is open).
BELOW_WORDS = ("INFO", "WARN", "DEBUG", "SUCCESS", "[info]", "[warning]", "[debug]", "TRACE")


def record(line: str) -> re.Match[str] | None:
    """The error record this line (its prefixes left off) is, or None."""
    return RECORD.search(line) if any(map(line.__contains__, WORDS[:6])) else None


def library(line: str) -> tuple[str, str, str] | None:
    """The library that wrote this error record, its level and its logger's name ('' where the format has none)."""
    m = record(line)
    if m is None:
        return None
    group = next(g for g in _LIBRARY if m[g + "_msg"] is not None)
    level = m[group] if group in RECORD.groupindex else group.removeprefix("spdlog").replace("_c", "CRITICAL") or "ERROR"
    return _LIBRARY[group], "FATAL" if group == "glog" else level.upper(), m["logger"] or ""


def went_on(line: str) -> bool:
    """Whether this line (its prefixes left off) is a record below the error level: the process logging on."""
    glog_ = line[:1] in ("I", "W") and line[1:2].isdigit()  # glog's INFO and WARNING headers hold no word
    return (glog_ or any(map(line.__contains__, BELOW_WORDS))) and BELOW.search(line) is not None


def _traceback(message: str) -> bool:
    """Whether a record's message is a part of a traceback the logger prints line by line (vLLM's logger does): the
    exception's own line under it is read by errors.py; a frame is no statement."""
    return not message.strip() or message[:1].isspace() or message.startswith(("Traceback", 'File "'))


def read(who: Who, line: str, loc: Loc) -> list[Clue]:
    """A failed assertion, or an error record, as a clue of the line's process."""
    if "Assertion " in line and ASSERT.search(line):
        return [Clue(who, "c_assert", line[:300], loc)]
    if (m := record(line)) is not None and not _traceback(next(v for k, v in m.groupdict().items()
                                                                 if k.endswith("_msg") and v is not None)):
        kept = line[:300]  # as it stands
        return [Clue(who, "logged", kept, loc, store=storeclient.read(kept), nccl=nccl.words(kept),
                     gone=nccl.gone(kept), says=errors.stating(kept))]
    return []


class Records:
    """One input's error records, each read on its own (the assembler strips the line's prefixes first)."""

    def feed(self, text: str, loc: Loc) -> Iterable[Read]:
        return read(Who(), text.strip(), loc)


_NOBODY = Who()
_PY = "ERROR:trainer:could not load shard 3 of /data/train: checksum mismatch"
_GLOG = "F20250720 17:52:37.391902 1125343 util.h:139] Check failed: bind(*listen_fd, addr, len) >= 0 ERROR: binding"
_ASSERT = "python: ../src/alloc.c:88: pool_get: Assertion `slot < pool->size' failed."
FORMAT = Format(
    name="logged errors",
    words=WORDS,
    make=Records,
    headers=(GLOG_LINE,),
    patterns=(RECORD, ASSERT),
    logical=True,
    behind=(
        # a process's next record, once an error record of its is open
        Behind((RECORD,), (BELOW,)),
    ),
    samples=(
        Sample(_PY, "Python's Lib/logging/__init__.py: BASIC_FORMAT, '%(levelname)s:%(name)s:%(message)s'",
               (Clue(_NOBODY, "logged", _PY, AT),)),
        Sample(_GLOG, "glog 0.6.0 on: src/logging.cc, LogMessage::Init's header with the year (log_year_in_prefix); "
                      "src/glog/logging.h, CHECK's \"Check failed: \" #condition",
               (Clue(_NOBODY, "logged", _GLOG, AT),)),
        Sample(_ASSERT, "glibc assert/assert.c, __assert_fail_base's message",
               (Clue(_NOBODY, "c_assert", _ASSERT, AT),)),
    ),
)
