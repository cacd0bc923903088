"""Where a Python exception was raised: the frames of its traceback, innermost first, read at the exception's line.

CPython prints a traceback outermost first (Lib/traceback.py, StackSummary.format: ``  File "<file>", line <n>, in
<function>``, the source line under it), then the exception's line (``<name>: <message>``). The innermost frame is
where the exception was raised: an ``assert`` or ``raise`` in that file. Each process's frames are kept apart by the
prefix before ``File`` (a rank tag, a logger's header with its clock left off), and a new ``Traceback (most recent
call last):`` or a chained exception's line starts over. At the exception's line the frames become one ``raised``
fact: the exception's name, then each frame as ``file:line:function``, innermost first (at most ``DEPTH``), ``;``
between them. job/raisesite.py reads whose code raised it (a framework's own check) and the communication path the
frames run through (job/callpaths.toml).

A traceback is printed as its exception propagates out of the process (or a logger records it): it is that process's
failure whether or not its last line survives. An input that ends inside one, its last frame (with the source line
and carets CPython prints under it) the input's last lines and no exception's line after, was cut before that line
(a paste, a page, a console killed with its process): :meth:`Frames.cut` hands the open traceback to the assembler
at the input's end, which keeps it as its process's error (evidence/parse.py), its frames as a ``raised`` fact whose
name is empty, so that job/raisesite.py can say where the process stood.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

FRAME = re.compile(r'File "(?P<file>[^"]{1,400})", line (?P<line>\d{1,7}), in (?P<func>[\w<>.]{1,200})')
RAISED = re.compile(r"^(?P<name>[A-Za-z_][\w.]{0,200}(?:Error|Exception))(?::|$)")
START = ("Traceback (most recent call last)", "During handling of the above exception",
         "The above exception was the direct cause")
# A logger's clock in the prefix (vLLM's "ERROR 12-08 20:46:56 [file.py:597]"): every line of one traceback shares the
# rest of its prefix, not its second.
_CLOCK = re.compile(r"\d\d:\d\d:\d\d(?:[.,]\d+)?")
DEPTH = 12
# What CPython prints under a frame before the next one: its source line and, since 3.11, a line of carets (3.13 may
# quote a statement's few lines): at most this many lines between a traceback's last frame and an input that ends.
TAIL = 4
_ANYONE = Who()


def _key(prefix: str) -> str:
    return _CLOCK.sub("", prefix).strip()


class Frames:
    """One input's tracebacks, each process's (its prefix) apart: the frames since its last traceback's start."""

    def __init__(self) -> None:
        self._frames: dict[str, list[str]] = {}
        self._opened: set[str] = set()  # the processes whose frames follow a traceback's first line
        self._last: dict[str, tuple[str, Loc]] = {}  # each open traceback's last frame line, as printed

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if 'File "' in text and (m := FRAME.search(text)):
            key = _key(text[:m.start()])
            self._frames.setdefault(key, []).append(f"{m['file']}:{m['line']}:{m['func']}")
            self._last[key] = (text, loc)
            return ()
        if not self._frames and "Traceback" not in text:  # no traceback open: nothing to start over or to end
            return ()
        for start in START:
            if (at := text.find(start)) >= 0:
                key = _key(text[:at])
                self._frames.pop(key, None)
                self._opened.add(key)
                return ()
        if "Error" not in text and "Exception" not in text:
            return ()
        norm = _CLOCK.sub("", text)
        for key, frames in self._frames.items():
            at = norm.find(key) if key else 0
            if at < 0 or not (m := RAISED.match(norm[at + len(key):].lstrip())):
                continue
            del self._frames[key]
            self._opened.discard(key)
            return (Fact(_ANYONE, "raised", f"{m['name']}|{';'.join(reversed(frames[-DEPTH:]))}", loc),)
        return ()

    def cut(self, lines: int) -> list[tuple[str, str, Fact]]:
        """The tracebacks the input ends inside (``lines``: its last line's number): each one's last frame line as
        printed (its prefix names the process), the error it is in words, and its frames as a ``raised`` fact with
        no exception's name, at that line; in the input's order."""
        out = []
        for key, frames in self._frames.items():
            text, loc = self._last[key]
            if key in self._opened and lines - loc.line <= TAIL:
                file, line, func = frames[-1].rsplit(":", 2)
                said = f"Traceback cut off before its exception's line, in {func} ({_short(file)}:{line})"
                out.append((text, said, Fact(_ANYONE, "raised", f"|{';'.join(reversed(frames[-DEPTH:]))}", loc)))
        return sorted(out, key=lambda c: c[2].loc.line)


def _short(file: str) -> str:
    """A frame's file from its package on (``torch/distributed/utils.py``), else as printed."""
    for inside in ("site-packages/", "dist-packages/"):
        if (at := file.rfind(inside)) >= 0:
            return file[at + len(inside):]
    return file


_T228 = "tests/data/public_threads/228-vllm-28873-ray-two-node-local-world-size-assert.log"
FORMAT = Format(
    name="raise site",
    words=('File "', "Traceback (most recent call last)", "During handling of the above exception",
           "The above exception was the direct cause", "Error", "Exception"),
    make=Frames,
    patterns=(FRAME, RAISED),
    behind=(
        # a frame's prefix and an exception's line: the clock of a logger's header, left out
        Behind((FRAME, "Error", "Exception"), (_CLOCK,)),
    ),
    samples=(
        Sample("(EngineCore_DP0 pid=570282) AssertionError: local_world_size (16) must be less than or equal to the "
               "number of visible devices (8).", f"{_T228}:4",
               (Fact(_ANYONE, "raised", "AssertionError|/home/julien.denize/workspace/vllm/vllm/v1/worker/"
                                        "gpu_worker.py:212:init_device", AT),),
               before=('(EngineCore_DP0 pid=570282)   File "/home/julien.denize/workspace/vllm/vllm/v1/worker/'
                       'gpu_worker.py", line 212, in init_device',)),
        # a traceback with no prefix: the exception's line starts with its name (a module's path before it)
        Sample("torch.distributed.elastic.multiprocessing.api.SignalException: Process 922 got signal: 15",
               "tests/data/launchers/torchrun/agent_term/console.log:45",
               (Fact(_ANYONE, "raised", "torch.distributed.elastic.multiprocessing.api.SignalException|"
                     "/work/main/.venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/api.py:"
                     "86:_terminate_process_handler", AT),),
               before=('  File "/work/main/.venv/lib/python3.11/site-packages/torch/distributed/elastic/'
                       'multiprocessing/api.py", line 86, in _terminate_process_handler',
                       '    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)')),
    ),
)
