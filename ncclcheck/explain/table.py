"""A model's tensors as the frameworks see them, and where that knowledge came from.

Every layout reads one ``Table``: the parameters in registration order (shared ones once, frozen ones marked), the
buffers DDP broadcasts, the blocks FSDP wraps, the order gradients become ready and the tensor-parallel plan. A
table built from the model itself (transformers on the meta device, the user's own module) is exact; one read from
a checkpoint knows names, shapes and dtypes but infers the order; the built-in layouts are written from each
family's source and cover fewer models.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ncclcheck.explain.models import Model
from ncclcheck.explain.params import Param, buffers, forward_order, parameters
from ncclcheck.explain.params import units as units_by_name

BUILTIN, TRANSFORMERS, CHECKPOINT, MODULE = "built-in", "transformers", "checkpoint", "module"
# Where no pass ran, the order gradients become ready is unknown. What is known is the registration order and the
# rule DDP itself builds on it: at construction the reducer forms its buckets over model.parameters() and reverses
# the list, assuming the forward uses parameters in the order they are registered, so that their gradients become
# ready in the reverse (torch/nn/parallel/distributed.py, _ddp_init_helper). That reverse is the order taken.
READY_FORWARD = ("not observed: the reverse of the order the family's forward uses its parameters, as the built-in "
                 "layout writes it from transformers' modeling code")
READY_RULE = ("not observed: taken as the reverse of registration order (model.parameters()), the order DDP's "
              "reducer assumes when it forms its buckets at construction")


@dataclass(frozen=True)
class Table:
    """The tensors a collective can carry, with how each fact was learnt."""

    params: tuple[Param, ...]  # registration order, shared tensors once
    buffers: tuple[Param, ...] = ()
    blocks: tuple[str, ...] = ()  # module paths FSDP wraps (one unit each), in registration order
    ready: tuple[str, ...] = ()  # parameter names in the order their gradients became ready; empty: inferred
    tp_plan: tuple[tuple[str, str], ...] = ()  # (module or parameter pattern, style as the model's plan writes it)
    embedding: str = ""  # the input embedding's weight, where known
    origin: str = BUILTIN
    source: str = "the built-in layouts"  # said in every answer
    notes: tuple[str, ...] = ()  # what is inferred rather than known
    ready_how: str = READY_RULE  # how the gradient-ready order was learnt ("observed: ..." or "not observed: ...")

    @property
    def ready_observed(self) -> bool:
        return self.ready_how.startswith("observed")
    classes: tuple[tuple[str, str], ...] = ()  # (module path, class name) of every module, where the model is known
    tied: tuple[tuple[str, str], ...] = ()  # (another name of a shared parameter, the name it is listed under)

    @property
    def trainable(self) -> tuple[Param, ...]:
        """The parameters that get gradients (what DDP buckets and FSDP reduces)."""
        return tuple(p for p in self.params if p.trainable)

    def ready_order(self) -> list[Param]:
        """Trainable parameters in gradient-ready order: observed where a pass ran, else the reverse of registration
        order (``READY_RULE``); parameters the pass left without a gradient take their place in that reverse."""
        trainable = self.trainable
        if not self.ready:
            return list(reversed(trainable))
        by_name = {p.name: p for p in trainable}
        first = [by_name[n] for n in self.ready if n in by_name]
        seen = {p.name for p in first}
        rest = [p for p in reversed(trainable) if p.name not in seen]
        # What fed the input embeddings in the real step (a vision tower's features merged into them) is ready
        # before the embedding table, whose lookup is the last op of the backward pass.
        at = next((k for k, p in enumerate(first) if p.name == self.embedding), len(first))
        return first[:at] + rest + first[at:]

    def units(self, tensors: Sequence[Param] | None = None) -> list[tuple[str, list[Param]]]:
        """FSDP's units when every block is wrapped: each block's own parameters (or the ``tensors`` given, such as
        the buffers), then the root holding the rest."""
        tensors = self.params if tensors is None else tensors
        if not self.blocks:
            return units_by_name(tensors)
        ordered = sorted(self.blocks, key=len, reverse=True)  # the innermost block owns a tensor
        found: dict[str, list[Param]] = {b: [] for b in self.blocks}
        root: list[Param] = []
        for p in tensors:
            owner = next((b for b in ordered if p.name.startswith(b + ".")), None)
            (found[owner] if owner else root).append(p)
        return [*((b, ps) for b, ps in found.items() if ps), ("", root)]

    def embedding_width(self) -> tuple[str, int] | None:
        """The input embedding's weight and its width (the hidden size H of what follows it): the weight the model
        names as its input embedding, else the first ``nn.Embedding`` registered; None where there is none."""
        embeddings = {n for n, c in self.classes if c == "Embedding"}
        for p in self.params:
            if len(p.shape) == 2 and (p.name == self.embedding if self.embedding else
                                      p.name.rpartition(".")[0] in embeddings):
                return p.name, p.shape[1]
        return None

    def style(self, name: str) -> str | None:
        """The TP plan's style for a parameter (``colwise``, ``rowwise_split_input``, ...), or None: an entry naming
        the parameter itself first, then one naming its module."""
        return _style(self.tp_plan, name)


@functools.lru_cache(maxsize=1 << 16)
def _style(plan: tuple[tuple[str, str], ...], name: str) -> str | None:
    """Table.style, remembered: the layouts ask it for every parameter at every count explained (a run's 2,808 counts
    asked 776,000 patterns, a fifth of the time explain took)."""
    module = name.rpartition(".")[0]
    for target in (name, module):
        for pattern, style in plan:
            if _plan_regex(pattern).search(target):
                return style
    return None


@functools.lru_cache(maxsize=1 << 12)
def _plan_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(r"(^|\.)" + re.escape(pattern).replace(r"\*", r"\d+") + "$")


def builtin_table(m: Model) -> Table:
    """The table the built-in layouts write for this model's shape (empty when they do not describe it)."""
    params = tuple(parameters(m))
    notes = ("names, order and gradient-ready order follow the built-in Llama-style layout",) if params else ()
    source = "the built-in layouts" + (f" (the config's own model could not be built: {m.unbuilt})" if m.unbuilt else "")
    ready = tuple(p.name for p in reversed(forward_order(m)))
    return Table(params, tuple(buffers(m)), ready=ready, notes=notes, source=source, ready_how=READY_FORWARD)
