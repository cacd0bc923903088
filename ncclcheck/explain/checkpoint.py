"""A parameter table read from a safetensors checkpoint's headers: names, shapes and dtypes, no torch, no weights.

A ``.safetensors`` file starts with an 8-byte little-endian header length and a JSON header naming every tensor
with its dtype and shape; a sharded checkpoint adds ``model.safetensors.index.json`` mapping names to files. Only the
headers are read. What a checkpoint does not hold is inferred and said: the registration order (tensors are stored
sorted, so block-numbered names are put in natural order), which tensors are buffers (integer ones are; parameters
are floating point) and the blocks (each member of a numbered list of modules).
"""

from __future__ import annotations

import json
import os
import re
import struct

from ncclcheck.explain.counts import ExplainError
from ncclcheck.explain.params import Param
from ncclcheck.explain.table import CHECKPOINT, Table

HEADER_LIMIT = 100 * 2**20  # bytes; real headers are a few hundred kB even for 1,000-tensor shards
INDEX = "model.safetensors.index.json"
DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "F8_E4M3": "float8",
          "F8_E5M2": "float8", "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8",
          "BOOL": "bool"}


def _header(path: str) -> dict:
    """The JSON header of one safetensors file."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise ExplainError(f"{path}: too short to be a safetensors file")
            (size,) = struct.unpack("<Q", head)
            if size > HEADER_LIMIT:
                raise ExplainError(f"{path}: header of {size:,} bytes, not a safetensors file")
            data = f.read(size)
    except OSError as exc:
        raise ExplainError(f"{path}: {exc.strerror or exc}") from None
    try:
        header = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ExplainError(f"{path}: not a safetensors file (its header is not JSON)") from None
    if not isinstance(header, dict):
        raise ExplainError(f"{path}: not a safetensors file (its header is not a JSON object)")
    return header


def _files(folder: str) -> list[str]:
    """The checkpoint's files: those the index names, else every .safetensors file in the folder."""
    if os.path.isfile(folder):
        return [folder]
    index = os.path.join(folder, INDEX)
    if os.path.isfile(index):
        try:
            with open(index, encoding="utf-8") as f:
                weight_map = json.load(f).get("weight_map")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
            raise ExplainError(f"{index}: not a safetensors index ({type(exc).__name__})") from None
        if not isinstance(weight_map, dict):
            raise ExplainError(f"{index}: no weight_map")
        return [os.path.join(folder, name) for name in sorted(set(map(str, weight_map.values())))]
    try:
        found = sorted(n for n in os.listdir(folder) if n.endswith(".safetensors"))
    except OSError as exc:
        raise ExplainError(f"{folder}: {exc.strerror or exc}") from None
    if not found:
        raise ExplainError(f"{folder}: no .safetensors file and no {INDEX}")
    return [os.path.join(folder, n) for n in found]


def _natural(name: str) -> list[object]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def blocks_of(names: list[str]) -> tuple[str, ...]:
    """Blocks from names alone: each member of a numbered list (``encoder.layer.3``) that has several members."""
    members: dict[str, set[str]] = {}
    for name in names:
        parts = name.split(".")
        at = next((k for k, part in enumerate(parts[:-1]) if part.isdigit()), None)
        if at:
            members.setdefault(".".join(parts[:at]), set()).add(parts[at])
    out = [f"{parent}.{i}" for parent, idx in members.items() if len(idx) > 1 for i in sorted(idx, key=int)]
    return tuple(sorted(out, key=_natural))


def table_from_checkpoint(path: str) -> Table:
    """The table of a checkpoint folder (or one .safetensors file)."""
    params: list[Param] = []
    buffers: list[Param] = []
    for file in _files(path):
        for name, info in _header(file).items():
            if name == "__metadata__":
                continue
            if not isinstance(info, dict) or not isinstance(info.get("shape"), list) or not all(
                    isinstance(d, int) and d >= 0 for d in info["shape"]):
                raise ExplainError(f"{file}: tensor {name!r} has no valid shape")
            dtype = DTYPES.get(str(info.get("dtype")), str(info.get("dtype")).lower())
            t = Param(name, tuple(info["shape"]), dtype, not dtype.startswith(("int", "uint", "bool")))
            (params if t.trainable else buffers).append(t)
    if not params:
        raise ExplainError(f"{path}: the checkpoint holds no floating-point tensor")
    params.sort(key=lambda p: _natural(p.name))
    buffers.sort(key=lambda p: _natural(p.name))
    notes = ("registration order inferred from the names (a checkpoint stores tensors sorted): DDP's rebuilt buckets "
             "and FSDP1's use_orig_params padding are approximate",
             "buffers a checkpoint does not store (rotary inv_freq) are missing from DDP's buffer broadcasts")
    return Table(tuple(params), tuple(buffers), blocks_of([p.name for p in params]), origin=CHECKPOINT,
                 source=f"checkpoint {path} (safetensors headers)", notes=notes)
