"""Evidence files: what a node's inputs said, reduced where the logs live and merged anywhere.

At 100,000 ranks the logs are terabytes spread over thousands of nodes.  ``analyze-log --evidence-out F``
reads one node's inputs and writes their typed evidence (the :class:`FileScan` of every input, and the inputs
it could not open) to ``F``: kilobytes per rank.  Given evidence files, ``analyze-log`` takes those scans as
they were read, so the verdict is the one the raw logs would give.

The file is JSON (gzip when the name ends in ``.gz``): ``{"ncclcheck_evidence": 4, "version": ..., "problems":
[...], "scans": [...]}``.  Each dataclass is the list of its fields in declaration order, decoded against the
type hints by one function generated per dataclass; a file that does not fit them is an input problem, not a
traceback.  Decoding shares what a log repeats on every line (one object per distinct process, group, frame and
string) and stores a location in the scan's own file as its line alone.  msgspec, which decodes JSON objects straight
into dataclasses, was measured on the 100,000-rank merge of 1,000 files (issue 40): it can do neither, and the merge
took 19 s of CPU instead of 25 s but 1.66 GB instead of 0.67 GB, so the format stays lists and the decoder ours.
"""

from __future__ import annotations

import dataclasses
import enum
import gzip
import json
import types
import typing
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ncclcheck import __version__
from ncclcheck.evidence.frdump import Frame
from ncclcheck.evidence.inflate import InflateLimit, read_bounded
from ncclcheck.evidence.tables import LineTable
from ncclcheck.evidence.types import PG, FileScan, InputProblem, Loc, Who

FORMAT = 4
MAGIC = b'{"ncclcheck_evidence":'
GZIP_MAGIC = b"\x1f\x8b"


class BundleError(Exception):
    """An evidence file that cannot be read or does not fit the format."""


def encode(obj: Any, file: str | None = None) -> Any:
    """A dataclass tree as plain JSON values: a dataclass is the list of its fields, a location in ``file`` (the
    scan's own) its line alone."""
    if isinstance(obj, Loc):
        return obj.line if obj.file == file else [obj.file, obj.line]
    if isinstance(obj, FileScan):
        file = obj.file
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [encode(getattr(obj, f.name), file) for f in dataclasses.fields(obj)]
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (tuple, list, LineTable)):  # a table (group inits, facts) is stored as the lines it holds
        return [encode(x, file) for x in obj]
    if isinstance(obj, Mapping):
        return {str(k): encode(v, file) for k, v in obj.items()}
    return obj


def dumps(scans: Sequence[FileScan], problems: Sequence[InputProblem], compress: bool) -> bytes:
    """The evidence file's bytes (gzip when ``compress``: logs of a node shrink to a few hundred bytes a rank)."""
    doc = {"ncclcheck_evidence": FORMAT, "version": __version__,
           "problems": [encode(p) for p in problems], "scans": [encode(s) for s in scans]}
    data = json.dumps(doc, separators=(",", ":")).encode()
    return gzip.compress(data, compresslevel=6, mtime=0) if compress else data


def read(path: str) -> tuple[list[FileScan], list[InputProblem]]:
    """The scans and the unopened inputs an evidence file holds."""
    try:
        doc = json.loads(read_bounded(path))  # gzip under evidence/inflate.py's limits, as every compressed input
    except InflateLimit as exc:
        raise BundleError(str(exc)) from None
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"not a readable evidence file ({exc})") from exc
    if not isinstance(doc, dict):
        raise BundleError("not an evidence file (no object at the top)")
    if doc.get("ncclcheck_evidence") != FORMAT:
        raise BundleError(f"evidence format {doc.get('ncclcheck_evidence')!r} is not {FORMAT}: written by "
                          f"ncclcheck {doc.get('version')}, read by {__version__}")
    try:
        return ([_decoder(FileScan)(s, _Context()) for s in _list(doc["scans"])],
                [_decoder(InputProblem)(p, _Context()) for p in _list(doc["problems"])])
    except (KeyError, TypeError, ValueError) as exc:
        raise BundleError(f"does not fit evidence format {FORMAT} ({exc})") from exc


class _Context:
    """What decoding one scan shares: its file (a location in it is stored as the line alone), and one object per
    distinct process, group, frame and string (a log names a few of each on millions of lines)."""

    __slots__ = ("file", "shared")

    def __init__(self) -> None:
        self.file = ""
        self.shared: dict[Any, Any] = {}


Decoder = Callable[[Any, _Context], Any]
_DECODERS: dict[Any, Decoder] = {}
_SHARED = (Who, PG, Frame)


def _decoder(tp: Any) -> Decoder:
    """A function from JSON values to ``tp``, built once per type from its hints."""
    found = _DECODERS.get(tp)
    if found is None:
        found = _DECODERS[tp] = _build(tp)
    return found


def _list(v: Any) -> list[Any]:
    if type(v) is not list:
        raise TypeError(f"{v!r} is not a list")
    return v


def _int(v: Any, ctx: _Context) -> int:
    if type(v) is not int:  # JSON's booleans are not integers here
        raise TypeError(f"{v!r} is not an integer")
    return v


def _bool(v: Any, ctx: _Context) -> bool:
    if type(v) is not bool:
        raise TypeError(f"{v!r} is not a boolean")
    return v


def _str(v: Any, ctx: _Context) -> str:
    if type(v) is not str:
        raise TypeError(f"{v!r} is not a string")
    same: str = ctx.shared.setdefault(v, v)
    return same


def _number(v: Any, ctx: _Context) -> float:
    if type(v) not in (int, float):
        raise TypeError(f"{v!r} is not a number")
    return float(v)


def _loc(v: Any, ctx: _Context) -> Loc:
    if type(v) is int:
        return Loc(ctx.file, v)
    file, line = _list(v)
    return Loc(_str(file, ctx), _int(line, ctx))


def _build(tp: Any) -> Decoder:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        (only,) = [a for a in args if a is not type(None)]  # the evidence types use X | None only
        dec = _decoder(only)
        return lambda v, ctx: None if v is None else dec(v, ctx)
    if origin is Sequence:  # a scan's group inits or facts: a tuple here (evidence/tables.py)
        item = _decoder(args[0])
        return lambda v, ctx: tuple([item(x, ctx) for x in _list(v)])
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = _decoder(args[0])
            return lambda v, ctx: tuple([item(x, ctx) for x in _list(v)])
        parts = [_decoder(a) for a in args]
        return lambda v, ctx: tuple([p(x, ctx) for p, x in zip(parts, _list(v), strict=True)])
    if origin in (Mapping, dict, typing.Mapping):
        value = _decoder(args[1])

        def mapping(v: Any, ctx: _Context) -> dict[str, Any]:
            if type(v) is not dict:
                raise TypeError(f"{v!r} is not an object")
            return {k: value(x, ctx) for k, x in v.items()}
        return mapping
    if tp is Loc:
        return _loc
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return lambda v, ctx: tp(v)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass(tp)
    simple = {int: _int, bool: _bool, str: _str, float: _number}
    if tp in simple:
        return simple[tp]
    raise TypeError(f"no decoder for {tp!r}")


# A dataclass's decoder is one generated function (as ``dataclasses`` generates ``__init__``): the list unpacked and
# each field checked inline, so that a scan of thousands of events costs one call per event, not one per value.
_CHECK = {int: "type({v}) is int", bool: "type({v}) is bool", str: "type({v}) is str"}
_FAIL = {int: "_not_int", bool: "_not_bool", str: "_not_str"}


def _field(hint: Any, v: str, env: dict[str, Any]) -> str:
    """An expression decoding the JSON value named ``v`` into ``hint``."""
    optional = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        (hint,) = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = True
    if hint is str:  # one object per distinct string
        expr = f"(share({v}, {v}) if type({v}) is str else _not_str({v}))"
    elif hint in _CHECK:
        expr = f"({v} if {_CHECK[hint].format(v=v)} else {_FAIL[hint]}({v}))"
    elif hint is Loc:
        expr = f"(Loc(ctx.file, {v}) if type({v}) is int else _loc({v}, ctx))"
    else:
        name = f"_d{len(env)}"
        env[name] = _decoder(hint)
        expr = f"{name}({v}, ctx)"
    return f"(None if {v} is None else {expr})" if optional else expr


def _dataclass(tp: type) -> Decoder:
    hints = typing.get_type_hints(tp)
    names = [f"v{i}" for i, _ in enumerate(dataclasses.fields(tp))]
    env: dict[str, Any] = {"tp": tp, "Loc": Loc, "_loc": _loc, "_not_int": _not_int, "_not_bool": _not_bool,
                           "_not_str": _not_str, "_wrong": _wrong}
    args = ", ".join(_field(hints[f.name], v, env) for f, v in zip(dataclasses.fields(tp), names, strict=True))
    n = len(names)
    code = ["def make(v, ctx):",
            f"    if type(v) is not list or len(v) != {n}: _wrong(tp, {n})",
            f"    {', '.join(names)}, = v",
            "    share = ctx.shared.setdefault"]
    if tp is FileScan:  # its locations in its own file are stored as the line alone
        code.append("    ctx.file = v0 = _not_str(v0) if type(v0) is not str else share(v0, v0)")
    code.append(f"    return tp({args})")
    exec("\n".join(code), env)  # noqa: S102  (code built here from the type hints, never from input)
    make: Decoder = env["make"]
    if tp not in _SHARED:
        return make

    def shared(v: Any, ctx: _Context) -> Any:
        key = (tp, *v)  # a value that is not a list fails in make()
        found = ctx.shared.get(key)
        if found is None:
            found = ctx.shared[key] = make(v, ctx)
        return found
    return shared


def _wrong(tp: type, n: int) -> None:
    raise TypeError(f"{tp.__name__}: {n} fields expected")


def _not_int(v: Any) -> Any:
    raise TypeError(f"{v!r} is not an integer")


def _not_bool(v: Any) -> Any:
    raise TypeError(f"{v!r} is not a boolean")


def _not_str(v: Any) -> Any:
    raise TypeError(f"{v!r} is not a string")
