"""PyTorch's check of a checkpoint's tensors against the model's as ``load_state_dict`` copies them in: a tensor whose
shape differs is named with both shapes, one line a tensor, under ``Error(s) in loading state_dict for <Module>:``.

Its forms (torch/nn/modules/module.py, ``_load_from_state_dict``, each release's):

* 1.0 on: ``size mismatch for <key>: copying a param with shape <checkpoint's> from checkpoint, the shape in current
  model is <model's>.``, the shapes as ``torch.Size([...])`` prints them;
* 0.4: ``size mismatch for <key>: copying a param of <shape> from checkpoint, where the shape is <shape> in current
  model.``, the source's arguments in the other order (the model's shape first): which is whose is not read;
* 0.3's ``While copying the parameter named <key>, whose dimensions in the model are <shape> and whose dimensions in
  the checkpoint are <shape>.`` (and the form later releases print where the copy itself raised, ``..., an exception
  occurred : <args>.``).

Each is a ``state_dict`` :class:`Clue` of the line's process, its words from ``size mismatch`` (or ``While copying``)
on: the process's stated reason, whose mechanism job/statements.toml names (``checkpoint_shape``).
:func:`sharded` reads the two shapes: flat ones, the larger k times the smaller (k >= 2, within the padding a shard
is rounded up by), are state sharded over ranks (FSDP's flat parameters and ZeRO's partitions hold
ceil(numel / world size) elements a rank) saved by a job of another world size.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

_SHAPE = r"(?:torch\.Size\(\[[\d, ]{0,120}\]\)|\([\d, ]{0,120}\)|\[[\d, ]{0,120}\])"
# 1.0 on, the checkpoint's shape first; 0.4, the model's first (the source's arguments swapped).
MISMATCH = re.compile(r"size mismatch for (?P<key>\S{1,300}): copying a param (?:with shape (?P<ckpt>" + _SHAPE
                      + r") from checkpoint, the shape in current model is (?P<model>" + _SHAPE + r")|of (?P<first>"
                      + _SHAPE + r") from checkpoint, where the shape is (?P<second>" + _SHAPE + r") in current model)")
# 0.3 on: the model's shape, then the checkpoint's.
COPYING = re.compile(r"While copying the parameter named \"?(?P<key>[^\",\n]{1,300})\"?, whose dimensions in the model "
                     r"are (?P<model>" + _SHAPE + r") and whose dimensions in the checkpoint are (?P<ckpt>" + _SHAPE
                     + r")")
_DIMS = re.compile(r"\d{1,20}")
WORDS = ("size mismatch for ", "While copying the parameter named ")
_ANYONE = Who()  # the line's process: the parser puts the clue on it


def shapes(text: str) -> tuple[tuple[int, ...], tuple[int, ...], bool] | None:
    """The two shapes a line names, the checkpoint's first where the line says which is whose (the bool), else in
    the line's order; None for another line."""
    m = MISMATCH.search(text) or COPYING.search(text)
    if m is None:
        return None
    if m["ckpt"] is not None:
        a, b, known = m["ckpt"], m["model"], True
    else:
        a, b, known = m["first"], m["second"], False
    return tuple(map(int, _DIMS.findall(a))), tuple(map(int, _DIMS.findall(b))), known


def sharded(text: str) -> tuple[int, int, int, bool] | None:
    """(k, the checkpoint's size, the model's size, whether the line says which is whose) where the line's two
    shapes are flat (one dimension, as FSDP's flat parameters and ZeRO's partitions are) and the larger is k times the
    smaller (k >= 2; the smaller rounded up by less than one element a rank, as a shard of ceil(numel / world size)
    is); the sizes in the line's order where it does not say which is whose. None otherwise: a shape of more
    dimensions that differs is a model of another configuration (a head of other classes) as often."""
    got = shapes(text)
    if got is None:
        return None
    a, b, known = got
    if len(a) != 1 or len(b) != 1 or min(a[0], b[0]) == 0:
        return None
    big, small = max(a[0], b[0]), min(a[0], b[0])
    k = round(big / small)
    if k < 2 or not 0 <= small * k - big < k:
        return None
    return k, a[0], b[0], known


class Lines:
    """One input's load_state_dict shape lines, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        m = None
        if "size mismatch for " in text:
            m = MISMATCH.search(text)
        elif "While copying the parameter named " in text:
            m = COPYING.search(text)
        return (Clue(_ANYONE, "state_dict", text[m.start():].strip()[:400], loc),) if m else ()


FORMAT = Format(
    name="PyTorch load_state_dict",
    words=WORDS,
    make=Lines,
    patterns=(MISMATCH, COPYING),
    behind=(Behind((MISMATCH, COPYING), (_DIMS,)),),
    samples=(
        Sample("\tsize mismatch for _flat_param: copying a param with shape torch.Size([9876544]) from checkpoint, "
               "the shape in current model is torch.Size([2469136]).",
               "PyTorch torch/nn/modules/module.py (_load_from_state_dict, 1.0 on)",
               (Clue(_ANYONE, "state_dict", "size mismatch for _flat_param: copying a param with shape "
                     "torch.Size([9876544]) from checkpoint, the shape in current model is torch.Size([2469136]).",
                     AT),)),
        Sample("    size mismatch for fc.weight: copying a param of torch.Size([10, 512]) from checkpoint, where the "
               "shape is torch.Size([1000, 512]) in current model.",
               "PyTorch 0.4 torch/nn/modules/module.py (_load_from_state_dict)",
               (Clue(_ANYONE, "state_dict", "size mismatch for fc.weight: copying a param of torch.Size([10, 512]) "
                     "from checkpoint, where the shape is torch.Size([1000, 512]) in current model.", AT),)),
        Sample('RuntimeError: While copying the parameter named "embed.weight", whose dimensions in the model are '
               "torch.Size([32000, 4096]) and whose dimensions in the checkpoint are torch.Size([32001, 4096]).",
               "PyTorch 0.3 torch/nn/modules/module.py (load_state_dict)",
               (Clue(_ANYONE, "state_dict", 'While copying the parameter named "embed.weight", whose dimensions in '
                     "the model are torch.Size([32000, 4096]) and whose dimensions in the checkpoint are "
                     "torch.Size([32001, 4096]).", AT),)),
    ),
)
