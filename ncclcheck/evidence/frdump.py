"""Read PyTorch flight-recorder dumps without torch, and without ever running code from them.

A dump (``TORCH_NCCL_DUMP_ON_TIMEOUT=1`` / ``TORCH_FR_*``) is one file per rank,
``<prefix><rank>``, holding a dict: ``version``, ``pg_config``, ``pg_status`` and
``entries`` (one per recent collective: ``collective_seq_id``, ``p2p_seq_id``,
``profiling_name``, ``process_group``, ``input_sizes``/``output_sizes``, dtypes,
``state`` scheduled/started/completed, ``timeout_ms``, Python ``frames``).  Older
releases name the sequence number ``seq_id``; PyTorch can also write the same dict
as JSON.  Format 2.10 (torch 2.9+) adds ``comm_lib_version`` and, per entry,
``thread_id``/``thread_name`` (the thread that issued the op) and ``duration_ms`` (when
timing is on).  torch 2.10+ writes ``~/.cache/torch/comm_lib_trace_rank_<rank>`` by
default (``/tmp/nccl_trace_rank_<rank>`` before); the file name ends in the global rank.
Point-to-point entries name their peer in ``profiling_name``: ``nccl:send 0->1`` is
group rank 0 sending to 1, ``nccl:recv 1<-0`` is 1 receiving from 0.

Pickle is a program, not data: loading one with the standard unpickler can call
any function.  ``_PlainUnpickler`` refuses every global (so no ``__reduce__`` can
name ``os.system``) and builds only containers and scalars.
"""

from __future__ import annotations

import io
import json
import pickle
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PICKLE_MAGIC = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
MAX_DUMP_BYTES = 256 << 20


# Bytes per element of each dtype as a dump names it: c10's ScalarType names (c10/core/ScalarType.h), which the
# recorder writes for ``input_dtypes``/``output_dtypes``.
C10_BYTES = {
    "Double": 8, "Long": 8, "ComplexFloat": 8, "UInt64": 8, "ComplexDouble": 16,
    "Float": 4, "Int": 4, "ComplexHalf": 4, "UInt32": 4, "QInt32": 4,
    "Half": 2, "BFloat16": 2, "Short": 2, "UInt16": 2,
    "Byte": 1, "Char": 1, "Bool": 1, "QInt8": 1, "QUInt8": 1, "Float8_e5m2": 1, "Float8_e4m3fn": 1,
    "Float8_e5m2fnuz": 1, "Float8_e4m3fnuz": 1,
}


class DumpError(Exception):
    """A dump that cannot be used: corrupt, truncated, not a dump, or asking to run code."""


class _PlainUnpickler(pickle.Unpickler):
    """Builds dicts, lists, tuples, strings and numbers; refuses everything that names a global."""

    def find_class(self, module: str, name: str) -> Any:
        raise DumpError(f"refuses to load {module}.{name}: a flight-recorder dump holds only plain data, "
                        "so this file may be malicious and is not read")

    def persistent_load(self, pid: Any) -> Any:
        raise DumpError("refuses persistent references: not a flight-recorder dump")


def looks_like_dump(head: bytes) -> bool:
    """True for a pickle, or a JSON object that names flight-recorder keys."""
    if head.startswith(PICKLE_MAGIC):
        return True
    text = head.lstrip()[:4096]
    return text.startswith(b"{") and (b'"entries"' in text or b'"pg_config"' in text or b'"pg_status"' in text)


@dataclass(frozen=True)
class Frame:
    """One Python stack frame: of a collective's recorded stack, or of a traceback (job/raisesite.py)."""

    name: str
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.name} at {self.file}:{self.line}"


@dataclass(frozen=True)
class Entry:
    """One collective (or p2p op) as one rank recorded it."""

    pg: str
    pg_desc: str | None
    seq: int | None  # collective sequence id (None for p2p)
    p2p_seq: int | None
    op: str
    input_sizes: tuple[tuple[int, ...], ...]
    output_sizes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    state: str
    timeout_ms: int | None
    is_p2p: bool
    frames: tuple[Frame, ...]
    pg_id: str | None = None  # the rank-local PG ID that pg_status is keyed by
    record_id: int | None = None  # issue order across all of this rank's groups
    peer: int | None = None  # send/recv: the other side's rank in this group ("nccl:send 0->1" -> 1)
    thread_id: str | None = None  # 2.10+: the thread that issued the op
    thread_name: str | None = None
    duration_ms: float | None = None  # 2.10+: GPU time of a completed op, when collective timing is on
    time_created_ns: int | None = None
    output_dtypes: tuple[str, ...] = ()  # "dtypes" are the inputs'; a gather's non-root output has none

    @property
    def numel_in(self) -> int:
        return sum(numel(s) for s in self.input_sizes)

    def signature(self) -> tuple[str, tuple[tuple[int, ...], ...], tuple[str, ...]]:
        return (self.op, self.input_sizes, self.dtypes)

    def user_frame(self) -> Frame | None:
        """The first frame outside torch itself: the line of user code that issued the collective."""
        return user_frame(self.frames)


def user_frame(frames: tuple[Frame, ...]) -> Frame | None:
    """The first frame outside torch itself (the line of user code), else the innermost one."""
    for f in frames:
        if "/torch/" not in f.file and "\\torch\\" not in f.file and not f.file.startswith("torch/"):
            return f  # (py-spy names a file relative to its sys.path entry: torch/distributed/distributed_c10d.py)
    return frames[0] if frames else None


@dataclass(frozen=True)
class Dump:
    """One rank's dump."""

    file: str
    rank: int | None
    version: str | None
    pg_ranks: Mapping[str, tuple[int, ...]]  # pg name -> global ranks
    pg_desc: Mapping[str, str]
    pg_status: Mapping[str, Mapping[str, int]]
    entries: tuple[Entry, ...]
    comm_lib_version: str | None = None  # NCCL version, "2.28.9" (2.10+ "comm_lib_version", older "nccl_version")


def numel(shape: tuple[int, ...]) -> int:
    """Elements in a tensor of this shape."""
    n = 1
    for d in shape:
        n *= d
    return n


def _int(v: Any) -> int | None:
    """An integer, also when a JSON dump spells it as a string ("139652544545088")."""
    if isinstance(v, str) and re.fullmatch(r"-?\d+", v):
        return int(v)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _float(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        return None
    try:
        return float(v)
    except ValueError:
        return None


def _str(v: Any) -> str | None:
    return None if v is None else str(v)


# ``nccl:all_reduce``, ``gloo:broadcast``: the backend that recorded the op, then its name (the analyzer's Op).
_BACKEND = re.compile(r"^[a-z][a-z0-9_]*:")
_P2P_NAME = re.compile(r"^(?:[a-z][a-z0-9_]*:)?(?P<op>send|recv)\s+(?P<me>-?\d+)\s*(?:->|<-)\s*(?P<peer>-?\d+)")


def p2p_peer(profiling_name: str) -> int | None:
    """The other side of a send/recv: ``nccl:send 0->1`` -> 1, ``nccl:recv 1<-0`` -> 0 (group ranks)."""
    m = _P2P_NAME.match(profiling_name)
    return int(m["peer"]) if m else None


def _sizes(v: Any) -> tuple[tuple[int, ...], ...]:
    if not isinstance(v, (list, tuple)):
        return ()
    return tuple(tuple(d for d in s if isinstance(d, int)) for s in v if isinstance(s, (list, tuple)))


def _dtypes(v: Any) -> tuple[str, ...]:
    """A list of dtype names; one name alone is one dtype, an empty string none (a tensor the rank did not pass)."""
    if isinstance(v, str):
        return (v,) if v else ()
    return tuple(str(d) for d in v or () if d not in (None, ""))


def _ranks(v: Any) -> tuple[int, ...]:
    if isinstance(v, str):
        return tuple(int(x) for x in re.findall(r"-?\d+", v))
    if isinstance(v, (list, tuple)):
        return tuple(x for x in v if isinstance(x, int))
    return ()


def _entry(e: Mapping[str, Any]) -> Entry:
    pg = e.get("process_group")
    name, desc = (str(pg[0]), str(pg[1]) if len(pg) > 1 else None) if isinstance(pg, (list, tuple)) and pg else (
        str(e.get("pg_id", "?")), None)
    seq = _int(e.get("collective_seq_id", e.get("seq_id")))
    frames = tuple(
        Frame(str(f.get("name", "?")), str(f.get("filename", "?")), _int(f.get("line")) or 0)
        for f in e.get("frames") or () if isinstance(f, Mapping)
    )
    op = _BACKEND.sub("", str(e.get("profiling_name", "?")), count=1)
    return Entry(
        pg=name,
        pg_desc=desc,
        seq=seq,
        p2p_seq=_int(e.get("p2p_seq_id")),
        op=op.split(" ", 1)[0],
        input_sizes=_sizes(e.get("input_sizes")),
        output_sizes=_sizes(e.get("output_sizes")),
        dtypes=_dtypes(e.get("input_dtypes")),
        state=str(e.get("state", "?")),
        timeout_ms=_int(e.get("timeout_ms")),
        is_p2p=bool(e.get("is_p2p", False)) or op.startswith(("send ", "recv ")),
        frames=frames,
        pg_id=str(e["pg_id"]) if _int(e.get("pg_id")) is not None else None,
        record_id=_int(e.get("record_id")),
        peer=p2p_peer(op),
        thread_id=_str(e.get("thread_id")),
        thread_name=_str(e.get("thread_name")),
        duration_ms=_float(e.get("duration_ms")),
        time_created_ns=_int(e.get("time_created_ns")),
        output_dtypes=_dtypes(e.get("output_dtypes")),
    )


def rank_from_name(name: str) -> int | None:
    """``nccl_trace_rank_3``, ``comm_lib_trace_rank_3`` -> 3 (PyTorch writes ``<prefix><rank>``)."""
    m = re.search(r"(?P<rank>\d+)(?:\.(?:pkl|pickle|json))?$", name)
    return int(m["rank"]) if m else None


def parse_dump(data: bytes, file: str) -> Dump:
    """Decode a dump's bytes (pickle or JSON) into a :class:`Dump`."""
    if len(data) > MAX_DUMP_BYTES:
        raise DumpError(f"larger than {MAX_DUMP_BYTES >> 20} MiB; not read")
    try:
        is_pickle = data.startswith(PICKLE_MAGIC)
        raw = _PlainUnpickler(io.BytesIO(data)).load() if is_pickle else json.loads(data.decode("utf-8"))
    except DumpError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, UnicodeDecodeError,
            RecursionError, MemoryError, AttributeError) as exc:
        raise DumpError(f"corrupt or truncated dump ({type(exc).__name__}: {exc})") from None
    if not isinstance(raw, Mapping) or not isinstance(raw.get("entries"), list):
        raise DumpError("not a flight-recorder dump (no 'entries' list)")
    cfg = c if isinstance(c := raw.get("pg_config"), Mapping) else {}
    status = s if isinstance(s := raw.get("pg_status"), Mapping) else {}
    return Dump(
        file=file,
        rank=_int(raw.get("rank")) if _int(raw.get("rank")) is not None else rank_from_name(file),
        version=str(raw["version"]) if "version" in raw else None,
        pg_ranks={str(k): _ranks(v.get("ranks")) for k, v in cfg.items() if isinstance(v, Mapping)},
        pg_desc={str(k): str(v.get("desc")) for k, v in cfg.items() if isinstance(v, Mapping) and v.get("desc")},
        pg_status={str(k): {kk: n for kk, vv in v.items() if (n := _int(vv)) is not None}
                   for k, v in status.items() if isinstance(v, Mapping)},
        entries=tuple(_entry(e) for e in raw["entries"] if isinstance(e, Mapping)),
        comm_lib_version=_str(raw.get("comm_lib_version", raw.get("nccl_version"))),
    )
