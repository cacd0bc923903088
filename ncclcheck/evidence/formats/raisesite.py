"""Where a Python exception was raised: the frames of its traceback, innermost first, read at the exception's line.

CPython prints a traceback outermost first (Lib/traceback.py, StackSummary.format: ``  File "<file>", line <n>, in
<function>``, the source line under it), then the exception's line (``<name>: <message>``). The innermost frame is
where the exception was raised: an ``assert`` or ``raise`` in that file. Each process's frames are kept apart by the
prefix before ``File`` (a rank tag, a logger's header with its clock left off), and a new ``Traceback (most recent
call last):`` or a chained exception's line starts over. At the exception's line the frames become one ``raised``
fact: the exception's name, then each frame as ``file:line:function``, innermost first (at most ``DEPTH``), ``;``
between them. job/raisesite.py reads whose code raised it (a framework's own check) and the communication path the
frames run through (job/callpaths.toml).
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
_ANYONE = Who()


def _key(prefix: str) -> str:
    return _CLOCK.sub("", prefix).strip()


class Frames:
    """One input's tracebacks, each process's (its prefix) apart: the frames since its last traceback's start."""

    def __init__(self) -> None:
        self._frames: dict[str, list[str]] = {}

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if 'File "' in text and (m := FRAME.search(text)):
            self._frames.setdefault(_key(text[:m.start()]), []).append(f"{m['file']}:{m['line']}:{m['func']}")
            return ()
        if not self._frames:  # no traceback open: nothing to start over or to end (most lines with its words)
            return ()
        for start in START:
            if (at := text.find(start)) >= 0:
                self._frames.pop(_key(text[:at]), None)
                return ()
        if "Error" not in text and "Exception" not in text:
            return ()
        norm = _CLOCK.sub("", text)
        for key, frames in self._frames.items():
            at = norm.find(key) if key else 0
            if at < 0 or not (m := RAISED.match(norm[at + len(key):].lstrip())):
                continue
            del self._frames[key]
            return (Fact(_ANYONE, "raised", f"{m['name']}|{';'.join(reversed(frames[-DEPTH:]))}", loc),)
        return ()


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
