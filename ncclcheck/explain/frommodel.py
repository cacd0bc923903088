"""Parameter tables read from the model itself: built on the meta device, so no weights, memory or network.

A Hugging Face config is built with ``transformers`` (the class named in ``architectures``), the user's own model
with a factory they name (``pkg.module:factory``). Either way the table is what DDP and FSDP see: parameters in
registration order with shared ones once, ``requires_grad``, buffers with their dtypes, the blocks FSDP wraps, the
config's tensor-parallel plan, and the order gradients become ready, from one forward and backward pass on the meta
device (where that pass cannot run, the order is inferred and the answer says so). torch and transformers are
imported only here, and only when a table is asked for.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Mapping

from ncclcheck.explain.counts import ExplainError
from ncclcheck.explain.params import Param
from ncclcheck.explain.table import MODULE, TRANSFORMERS, Table

# What building or running an arbitrary model class on the meta device can raise; anything else is a bug of ours.
_BUILD_ERRORS = (ValueError, TypeError, RuntimeError, KeyError, AttributeError, IndexError, NotImplementedError,
                 ImportError, OSError, AssertionError)
class RemoteCodeRefused(ExplainError):
    """The config's model class is custom code and the user did not allow running it."""


READY_BATCH, READY_SEQ = 2, 16  # the meta pass's input: its size changes no gradient's order


def available(package: str) -> bool:
    """Whether a package can be imported, found without importing it (and without importlib.metadata's ~17 ms)."""
    return importlib.util.find_spec(package) is not None


def installed(package: str) -> str | None:
    """The installed version of a package, found without importing it; None when it is not installed."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _dtype(t: object) -> str:
    return str(getattr(t, "dtype", "float32")).removeprefix("torch.")


def _blocks(module: object) -> tuple[str, ...]:
    """The blocks FSDP wraps: modules of the classes the model says must not be split (what Hugging Face's
    Trainer and Accelerate wrap), else the members of a container (ModuleList, Sequential) of identical modules."""
    import torch

    classes = set(getattr(module, "_no_split_modules", None) or ())
    named = list(module.named_modules())  # type: ignore[attr-defined]
    if classes:
        found = tuple(n for n, m in named if n and type(m).__name__ in classes)
        if found:
            return found
    out: list[str] = []
    for name, m in named:
        if isinstance(m, (torch.nn.ModuleList, torch.nn.Sequential)) and len(m) > 1 and len({type(c) for c in m}) == 1:
            out += [f"{name}.{k}" if name else str(k) for k in range(len(m))]
    return tuple(out)


def _tp_plan(module: object) -> tuple[tuple[str, str], ...]:
    """The config's own tensor-parallel plan, as written (patterns relative to the base model; a pattern may name a
    module or one parameter, such as a fused expert tensor)."""
    config = getattr(module, "config", None)
    plan = getattr(config, "base_model_tp_plan", None) or {}
    return tuple((str(pattern), str(style)) for pattern, style in plan.items())


def _inputs(module: object) -> dict | None:
    """Meta-device inputs for the model's forward: token ids, and decoder ids for an encoder-decoder model."""
    import torch

    config = getattr(module, "config", None)
    if config is None or not hasattr(module, "get_input_embeddings"):
        return None
    ids = torch.zeros(READY_BATCH, READY_SEQ, dtype=torch.long, device="meta")
    out = {"input_ids": ids}
    if getattr(config, "is_encoder_decoder", False):
        out["decoder_input_ids"] = ids
    return out


def _first_float(out: object) -> object | None:
    import torch

    if isinstance(out, torch.Tensor):
        return out if out.is_floating_point() else None
    values = out.values() if isinstance(out, Mapping) else out if isinstance(out, (tuple, list)) else ()
    for v in values:
        found = _first_float(v)
        if found is not None:
            return found
    return None


def _ready_order(module: object) -> tuple[tuple[str, ...], str | None]:
    """Parameter names in the order their gradients are accumulated, from a forward and backward pass on the meta
    device; with why it could not run where it could not."""

    inputs = _inputs(module)
    if inputs is None:
        return (), "no example input is known for this module"
    order: list[str] = []
    handles = []
    for name, p in module.named_parameters():  # type: ignore[attr-defined]
        if p.requires_grad:
            handles.append(p.register_post_accumulate_grad_hook(lambda _p, n=name: order.append(n)))
    try:
        return _backward(module, inputs, order)
    finally:
        for h in handles:
            h.remove()


def _backward(module: object, inputs: dict, order: list[str]) -> tuple[tuple[str, ...], str | None]:
    """One pass; a mixture-of-experts block whose grouped kernel has no meta implementation for float32 is run
    again through the batched expert path, which changes no parameter."""
    config = getattr(module, "config", None)
    for attempt in range(2):
        order.clear()
        try:
            out = _first_float(module(**inputs))  # type: ignore[operator]
            if out is None:
                return (), "the forward pass returned no floating-point tensor"
            out.float().sum().backward()
            return tuple(order), None
        except _BUILD_ERRORS as exc:
            if attempt or not hasattr(config, "_experts_implementation"):
                return (), f"the meta forward and backward pass failed ({type(exc).__name__})"
            config._experts_implementation = "batched_mm"  # type: ignore[union-attr]
    return (), None


def table_of(module: object, origin: str, source: str, notes: tuple[str, ...] = ()) -> Table:
    """The table of a module built on the meta device."""
    params = tuple(Param(n, tuple(p.shape), _dtype(p), bool(p.requires_grad))
                   for n, p in module.named_parameters())  # type: ignore[attr-defined]
    buffers = tuple(Param(n, tuple(b.shape), _dtype(b), False)
                    for n, b in module.named_buffers())  # type: ignore[attr-defined]
    ready, why = _ready_order(module)
    seen = set(ready)
    unused = [p.name for p in params if p.trainable and p.name not in seen]
    notes = list(notes)
    if why:
        notes.append(f"gradient-ready order inferred, so DDP's rebuilt buckets are approximate: {why}")
    elif unused:
        notes.append(f"{len(unused)} parameters got no gradient in the meta pass (used only with other inputs, "
                     "such as images): their place in the gradient-ready order is inferred")
    classes = tuple((n, type(m).__name__) for n, m in module.named_modules())  # type: ignore[attr-defined]
    listed = {id(p): n for n, p in module.named_parameters()}  # type: ignore[attr-defined]
    tied = tuple((n, listed[id(p)]) for n, p in module.named_parameters(remove_duplicate=False)  # type: ignore
                 if listed.get(id(p), n) != n)
    return Table(params, buffers, _blocks(module), ready, _tp_plan(module), _embedding(module), origin, source,
                 tuple(notes), classes, tied)


def _embedding(module: object) -> str:
    """The name of the input embedding's weight, where the module says which it is."""
    get = getattr(module, "get_input_embeddings", None)
    try:
        weight = getattr(get(), "weight", None) if callable(get) else None
    except NotImplementedError:
        return ""
    return next((n for n, p in module.named_parameters() if p is weight), "")  # type: ignore[attr-defined]


def _offline() -> None:
    """Never reach the network: a missing file must fail at once, not after the hub's retries."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # its config checks are not ours to print


def table_from_config(cfg: dict, path: str, trust_remote_code: bool = False) -> Table:
    """Build the config's model with transformers on the meta device and read its table."""
    version = installed("transformers") if available("transformers") and available("torch") else None
    if version is None:
        raise ExplainError("transformers is not installed")
    _offline()
    import torch
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    folder = path if os.path.isdir(path) else os.path.dirname(path) or "."
    model_type = cfg.get("model_type")
    custom = isinstance(cfg.get("auto_map"), dict) and model_type not in CONFIG_MAPPING
    archs = [a for a in cfg.get("architectures") or [] if isinstance(a, str)]
    if custom and not trust_remote_code:
        raise RemoteCodeRefused(f"{path}: its model class is custom code (auto_map) that explain would have to run; "
                                "pass --trust-remote-code to run the code beside config.json")
    try:
        if custom:
            config = transformers.AutoConfig.from_pretrained(folder, trust_remote_code=True, local_files_only=True)
            auto = next((k for k, v in cfg["auto_map"].items() if k.startswith("AutoModel")
                         and str(v).endswith("." + (archs[0] if archs else ""))), "AutoModelForCausalLM")
            builder = getattr(transformers, auto)
            with torch.device("meta"):
                model = builder.from_config(config, trust_remote_code=True)
        else:
            if model_type not in CONFIG_MAPPING:
                raise ExplainError(f"{path}: model_type {model_type!r} is not one transformers {version} knows")
            config = CONFIG_MAPPING[model_type].from_dict(cfg)
            cls = getattr(transformers, archs[0], None) if archs else None
            with torch.device("meta"):
                model = cls(config) if cls is not None else _auto_build(transformers, config)
    except _BUILD_ERRORS as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ExplainError(f"{path}: transformers {version} could not build this model: {first}") from None
    notes = []
    if not archs:
        notes.append(f"the config names no architectures: built as {type(model).__name__}, whose head may not be the "
                     "one trained")
    made = str(cfg.get("transformers_version") or "")
    if made and made.split(".")[0] != version.split(".")[0]:
        notes.append(f"the config was written by transformers {made} and built with {version}: major versions "
                     "differ in buffers and in how MoE experts are stored (the totals agree)")
    return table_of(model, TRANSFORMERS, f"transformers {version}, {type(model).__name__} built on the meta device",
                    tuple(notes))


# Without ``architectures``, the first auto class that has the config's model type builds it.
_AUTO_CLASSES = ("AutoModelForCausalLM", "AutoModelForImageTextToText", "AutoModelForSeq2SeqLM", "AutoModel")


def _auto_build(transformers: object, config: object) -> object:
    last: Exception | None = None
    for name in _AUTO_CLASSES:
        auto = getattr(transformers, name, None)
        if auto is None:
            continue
        try:
            return auto.from_config(config)
        except ValueError as exc:  # "Unrecognized configuration class ... for this kind of AutoModel"
            last = exc
    raise last if last is not None else ValueError("no auto class of this transformers builds it")


def table_from_factory(spec: str) -> Table:
    """Call ``pkg.module:factory`` on the meta device; it must return a torch module."""
    mod_name, sep, attr = spec.partition(":")
    if not sep or not mod_name or not attr:
        raise ExplainError(f"--module {spec}: expected pkg.module:factory")
    if not available("torch"):
        raise ExplainError(f"--module {spec}: torch is not installed")
    import torch

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        factory = getattr(importlib.import_module(mod_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ExplainError(f"--module {spec}: {exc}") from None
    try:
        with torch.device("meta"):
            model = factory()
    except _BUILD_ERRORS as exc:
        raise ExplainError(f"--module {spec}: the factory failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(model, torch.nn.Module):
        raise ExplainError(f"--module {spec}: the factory returned {type(model).__name__}, not a torch module")
    return table_of(model, MODULE, f"{spec} ({type(model).__name__}) built on the meta device")
