"""Parameter tables built from a model, kept on disk so that the next explain of the same model needs no torch.

Building a table imports torch and transformers and runs the model on the meta device: seconds. The table itself
is a few kB of names and shapes, and it changes only with what built it, so it is stored under a key made of
everything that does: the config's content, the installed transformers and torch, the code that builds and reads
tables (this package's own files), and the inputs the caller says change it (custom code allowed, the code files
beside the config, a named block class, an adapter). A hit reads one JSON file.

Where: ``$NCCLCHECK_CACHE_DIR``, else ``$XDG_CACHE_HOME/ncclcheck``, else ``~/.cache/ncclcheck``; ``NCCLCHECK_NO_CACHE=1``
(or ``explain --no-cache``) turns it off. An entry that cannot be read back is ignored, with a note the caller
shows, and rebuilt; a cache that cannot be written is skipped silently, because the answer is the same without it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import tempfile
from collections.abc import Mapping
from typing import Any

from ncclcheck.cachedir import directory
from ncclcheck.explain.params import Param
from ncclcheck.explain.table import Table

FORMAT = 1  # bumped when an entry's layout changes
# The files whose code decides what a table holds: a change to any of them makes every old entry a miss.
_CODE = ("frommodel.py", "params.py", "table.py", "cache.py")


def _install(package: str) -> str:
    """Which install of a package this is, found without importing it or reading its metadata (~20 ms each): the
    path, size and modification time of its ``__init__.py``, which any upgrade or reinstall changes."""
    spec = importlib.util.find_spec(package)
    origin = spec.origin if spec is not None else None
    if not origin:
        return ""
    try:
        st = os.stat(origin)
    except OSError:
        return origin
    return f"{origin}:{st.st_size}:{st.st_mtime_ns}"


def _code_digest() -> str:
    """A digest of the table-building code; where its files cannot be read (a zipped install), the version."""
    h = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        for name in _CODE:
            with open(os.path.join(here, name), "rb") as f:
                h.update(f.read())
    except OSError:
        from ncclcheck import __version__

        return __version__
    return h.hexdigest()


def key(config: Mapping, inputs: Mapping[str, object] | None = None) -> str:
    """The entry's name: a digest of the config's content, the versions and code that build a table, and the
    caller's other inputs that change it (JSON-able values)."""
    parts = {"format": FORMAT, "config": config, "transformers": _install("transformers"),
             "torch": _install("torch"), "code": _code_digest(), "inputs": dict(inputs or {})}
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _encode(value: object) -> object:
    if isinstance(value, Param):
        return {"param": [value.name, list(value.shape), value.dtype, value.trainable]}
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    return value


def _decode(value: object) -> object:
    if isinstance(value, dict):
        name, shape, dtype, trainable = value["param"]
        if not (isinstance(name, str) and isinstance(dtype, str) and isinstance(trainable, bool)
                and isinstance(shape, list) and all(isinstance(d, int) for d in shape)):
            raise ValueError("not a parameter")
        return Param(name, tuple(shape), dtype, trainable)
    if isinstance(value, list):
        return tuple(_decode(v) for v in value)
    return value


def _path(folder: str, digest: str) -> str:
    return os.path.join(folder, "tables", digest[:2], digest + ".json")


def load(digest: str) -> tuple[Table | None, str | None]:
    """The stored table for this key, or None; with a one-line note when an entry was there but unreadable."""
    folder = directory()
    if folder is None:
        return None, None
    path = _path(folder, digest)
    try:
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
        if entry.get("format") != FORMAT or entry.get("key") != digest:
            raise ValueError("written for another key or format")
        fields: dict[str, Any] = {k: _decode(v) for k, v in entry["table"].items()}
        return Table(**fields), None
    except (FileNotFoundError, NotADirectoryError):  # no entry (or no cache folder) yet
        return None, None
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        return None, f"cached table {path} could not be read ({why}): ignored, the table is built again"


def store(digest: str, table: Table) -> None:
    """Keep a table under its key (written whole, then renamed, so a reader never sees half an entry)."""
    folder = directory()
    if folder is None:
        return
    path = _path(folder, digest)
    entry = {"format": FORMAT, "key": digest,
             "table": {f.name: _encode(getattr(table, f.name)) for f in dataclasses.fields(table)}}
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entry, f, separators=(",", ":"))
            os.replace(tmp, path)
        except OSError:
            os.unlink(tmp)
            raise
    except OSError:
        return  # a read-only or full disk: the answer is the same without the cache
