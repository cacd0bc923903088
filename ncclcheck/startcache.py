"""What every run compiles alike at its start, kept in the cache folder (ncclcheck/cachedir.py) for the next run.

Importing what analyze-log needs compiles ~450 regular expressions (the sources of lines, the catalogue's causes,
the statements) and ~520 methods of ~90 frozen dataclasses, in pure Python, the same at every start: ~0.1 s and
~0.11 s of its ~0.45 s of imports on one core (a 2-core VM). On a many-core host the main process's start-up is
the reader's critical path: the workers read a 512 MiB chatty job in less time than the main process takes to
import what decides (docs/benchmarks.md, "The reader's start-up").

:func:`install` (the CLI's first step) compiles both through what an earlier run kept, and :func:`keep` (its last)
writes what this run added of this package's own (the libraries it imports, torch and transformers for explain, are
compiled as before: the file stays the size of this package's, ~1 MB):

* a pattern: what ``re`` hands its C engine (the arguments of ``_sre.compile``: the flags, the program, the groups
  and their names), so that the next run hands it the same without parsing the pattern again. The pattern made is
  the one ``re`` makes (``==``: same pattern, flags and program).
* a dataclass method: ``dataclasses`` writes each method as source and ``exec``-s it; the code compiled from that
  source (``compile(source, "<string>", "exec")``, as ``exec`` does) is kept, and the next run executes the same
  code, so the methods are the same functions.

The file is keyed by this interpreter's build, its bytecode and its regular expression engine's version
(``sys.version``, the cache tag, ``_sre.MAGIC``): another Python, a damaged file or the cache turned off compiles
as before. Nothing kept changes an answer, only how soon it comes.
"""

from __future__ import annotations

import builtins
import dataclasses
import hashlib
import importlib
import marshal
import os
import re
import sys
import tempfile
import types
from typing import Any

from ncclcheck import cachedir


def _module(name: str) -> Any:
    """A module of ``re``'s insides, as ``Any`` (no stubs), or None where this Python has none of that name."""
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - Python 3.10 names the compiler otherwise: its patterns compile each run
        return None


_sre = _module("_sre")  # the C engine
_compiler = _module("re._compiler")  # Python 3.11 and later: the compiler that feeds it

_PACKAGE = "ncclcheck"
MAX_ENTRIES = 8192  # of each kind, more than a run compiles: a run that adds past it starts the file afresh
_MAX_BYTES = 32 << 20  # a larger file is not ours
# What an earlier run kept (and this run added): pattern and flags -> the engine's arguments; source -> its code
_patterns: dict[tuple[str | bytes, int], tuple[Any, ...]] = {}
_codes: dict[str, types.CodeType] = {}
_added = [0]
_state: dict[str, Any] = {}  # the file, the installing process, the compiler replaced


def _path() -> str | None:
    folder = cachedir.directory()
    if folder is None:
        return None
    key = repr((sys.version, sys.implementation.cache_tag, marshal.version, getattr(_compiler, "MAGIC", None)))
    return os.path.join(folder, f"start-{hashlib.sha256(key.encode()).hexdigest()[:24]}.marshal")


def _plain(value: Any) -> Any:
    """The engine's arguments as marshal keeps them: its opcodes are int subclasses, which marshal refuses."""
    if value is None or isinstance(value, (bool, str, bytes)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    raise TypeError(type(value).__name__)


def _compile_pattern(pattern: Any, flags: int = 0) -> Any:
    """``re._compiler.compile`` with the engine's arguments looked up first, and recorded on a miss."""
    original = _state["compile"]
    if not isinstance(pattern, (str, bytes)) or flags & re.DEBUG:
        return original(pattern, flags)
    key = (pattern, int(flags))
    args = _patterns.get(key)
    if args is not None:
        try:
            return _sre.compile(pattern, *args)
        except (TypeError, ValueError, RuntimeError):  # not this engine's program after all: compiled as before
            del _patterns[key]
    seen: list[tuple[Any, ...]] = []

    def engine(*given: Any) -> Any:
        seen.append(given)
        return _sre.compile(*given)

    # The compiler reaches the engine through its module's ``_sre``: for this one call, one that records
    _compiler._sre = types.SimpleNamespace(**{**vars(_sre), "compile": engine})
    try:
        made = original(pattern, flags)
    finally:
        _compiler._sre = _sre
    if len(seen) == 1 and seen[0][0] == pattern and _ours(3):
        try:
            _patterns[key] = _plain(seen[0][1:])
            _added[0] += 1
        except TypeError:  # an argument marshal cannot keep: compiled each run
            pass
    return made


def _exec(source: Any, globals_: Any = None, locals_: Any = None, /) -> None:
    """``exec`` for ``dataclasses``: a method's source compiled as ``exec`` would (no ``__future__`` flags of this
    module: ``dont_inherit``), once for every run."""
    if isinstance(source, str):
        code = _codes.get(source)
        if code is None:
            code = compile(source, "<string>", "exec", dont_inherit=True)
            if isinstance(globals_, dict) and str(globals_.get("__name__", "")).startswith(_PACKAGE):
                _codes[source] = code  # a class of this package's: those of the libraries it imports are not kept
                _added[0] += 1
        source = code
    builtins.exec(source, globals_, locals_)


def _ours(depth: int) -> bool:
    """Whether the code ``depth`` frames up is this package's (a pattern of torch's or transformers', which explain
    imports, is compiled as before and not kept: the file stays the size of this package's)."""
    try:
        return str(sys._getframe(depth + 1).f_globals.get("__name__", "")).startswith(_PACKAGE)
    except ValueError:  # a shallower stack
        return False


def install() -> None:
    """Compile patterns and dataclass methods through what was kept, from here on (before the commands' imports)."""
    if "path" in _state or (path := _path()) is None:
        return
    try:
        with open(path, "rb") as fh:
            st, uid = os.fstat(fh.fileno()), getattr(os, "getuid", None)
            if uid is not None and (st.st_uid != uid() or st.st_mode & 0o022):  # code is run from it: only a file
                raise PermissionError(path)  # of this user's, that no one else may write
            kept = marshal.loads(fh.read(_MAX_BYTES))
        if isinstance(kept, tuple) and len(kept) == 2 and all(isinstance(k, dict) for k in kept):
            _patterns.update(kept[0])
            _codes.update(kept[1])
    except (OSError, EOFError, ValueError, TypeError):
        pass  # none kept yet, or damaged: compiled again and kept afresh
    _state.update(path=path, pid=os.getpid())
    if _compiler is not None:
        _state["compile"] = _compiler.compile
        _compiler.compile = _compile_pattern
    dataclasses.exec = _exec  # type: ignore[attr-defined]  # the module's own name for the builtin, looked up there


def keep() -> None:
    """Write what this run added, for the next (the installing process only: a forked worker's are its own);
    written whole or not at all, since several runs may race to it."""
    path = _state.get("path")
    if path is None or not _added[0] or os.getpid() != _state["pid"]:
        return
    if len(_patterns) > MAX_ENTRIES or len(_codes) > MAX_ENTRIES:  # patterns made from inputs, say: start afresh
        _patterns.clear()
        _codes.clear()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".start-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(marshal.dumps((_patterns, _codes)))
        os.replace(tmp, path)
    except (OSError, ValueError):  # a cache that cannot be written is skipped: the answer is the same without it
        return
    _added[0] = 0
