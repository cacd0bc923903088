"""Python tracebacks through torch.distributed: which collective a rank was in, and the user's line that called it.

gloo's timeout ("Timed out waiting 10000ms for recv operation to complete", evidence/formats/gloo.py) names no op
and no sequence number: the exception is raised by ``work.wait()`` inside the collective's Python function, so its
traceback does (``File ".../torch/distributed/distributed_c10d.py", line 3252, in all_reduce``), under the frame of
the user's code that called it. A traceback through autograd's backward (``_engine_run_backward``) and no
collective of its own is DDP's gradient all_reduce, issued by its reducer's hooks while backward runs
(torch/nn/parallel/distributed.py). Each such traceback is one ``collective_call`` fact of its rank: the op, then
the calling line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[\w<>.]+)')
# torch.distributed's collective functions (distributed_c10d.py), as their frames name them.
CALLS = frozenset((
    "all_reduce", "all_reduce_coalesced", "all_gather", "all_gather_into_tensor", "all_gather_object",
    "_all_gather_base", "all_gather_coalesced", "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base",
    "broadcast", "broadcast_object_list", "reduce", "gather", "gather_object", "scatter", "scatter_object_list",
    "all_to_all", "all_to_all_single", "barrier", "monitored_barrier", "send", "recv", "isend", "irecv",
    "batch_isend_irecv", "send_object_list", "recv_object_list",
))
ANYONE = Who()  # the line's process: the parser puts it on the fact
BACKWARD = frozenset(("_engine_run_backward", "run_backward"))  # torch/autograd: DDP's all_reduce runs inside


# The functions decorators wrap a call in: the frame of such a function calls on behalf of the one above it
# (typing_extensions' @deprecated, on all_gather_into_tensor in torch 2.13, is ``wrapper``).
_WRAPPERS = frozenset(("wrapper", "inner", "wrapped", "decorated"))


def _torch(file: str) -> bool:
    return "/torch/" in file or "\\torch\\" in file


class Calls:
    """One input's tracebacks, each rank's (a prefix before ``File``) apart: its last frame of user code, then the
    first torch.distributed collective (or backward) below it."""

    def __init__(self) -> None:
        self._user: dict[str, tuple[str, int]] = {}
        self._said: set[str] = set()

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if not (m := FRAME.search(text)):
            return ()
        key = text[:m.start()].strip()
        file, line, func = m["file"], int(m["line"]), m["func"]
        if not _torch(file):
            if func not in _WRAPPERS:  # a decorator's wrapper (typing_extensions' @deprecated) calls for the frame above
                self._user[key] = (file, line)
            self._said.discard(key)
            return ()
        at = self._user.get(key)
        call = func if func in CALLS else "backward" if func in BACKWARD and "autograd" in file else None
        if call is None or at is None or key in self._said:
            return ()
        self._said.add(key)
        return (Fact(ANYONE, "collective_call", f"{call} {at[0]}:{at[1]}", loc),)


_REAL = "tests/data/real_gloo/allreduce/console.log"
FORMAT = Format(
    name="Python traceback",
    words=('File "',),
    make=Calls,
    patterns=(FRAME,),
    samples=(
        Sample('[default0]:[rank0]:   File "/work/main/.venv/lib/python3.11/site-packages/torch/distributed/'
               'distributed_c10d.py", line 3252, in all_reduce', f"{_REAL}:12",
               (Fact(ANYONE, "collective_call", "all_reduce /tmp/gl/hang.py:14", AT),),
               before=('[default0]:[rank0]:   File "/tmp/gl/hang.py", line 14, in <module>',)),
    ),
)
