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
import importlib.util
import os
import sys
from collections.abc import Mapping
from typing import Any, TypeGuard

from ncclcheck.explain.counts import ExplainError
from ncclcheck.explain.memcap import BUDGET, capped, out_of_memory
from ncclcheck.explain.params import Param
from ncclcheck.explain.table import MODULE, READY_RULE, TRANSFORMERS, Table

# What building or running an arbitrary model class on the meta device can raise; anything else is a bug of ours.
_BUILD_ERRORS: tuple[type[BaseException], ...] = (
    ValueError, TypeError, RuntimeError, KeyError, AttributeError, IndexError, NotImplementedError, ImportError,
    OSError, AssertionError)


def _build_errors() -> tuple[type[BaseException], ...]:
    """``_BUILD_ERRORS`` and the validation error of transformers' config classes (strict dataclasses of
    huggingface_hub, whose errors derive from Exception alone); called once transformers is imported."""
    try:
        from huggingface_hub.errors import StrictDataclassError
    except ImportError:  # an older huggingface_hub, whose configs are not validated
        return _BUILD_ERRORS
    return (*_BUILD_ERRORS, StrictDataclassError)


def _pass_errors() -> tuple[type[BaseException], ...]:
    """What a pass over a model of unknown size can raise: a build error, or an allocation refused under the
    ceiling on memory (``memcap``), which Python code meets as MemoryError."""
    return (*_build_errors(), MemoryError)


_LONG = 300  # characters; past them an error is cut after its first sentence


def one_line(exc: BaseException) -> str:
    """An exception's message as one line (transformers' validation errors span several); a very long one up to
    the end of its first sentence (an auto class's refusal goes on to list every config class it knows)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, KeyError):  # its message is the missing key alone
        text = f"no key {text}"
    end = text.find(". ", 0, _LONG)
    return text[:end + 1] + " (...)" if len(text) > _LONG and end > 0 else text


class RemoteCodeRefused(ExplainError):
    """The config's model class is custom code and the user did not allow running it."""


READY_BATCH, READY_SEQ = 2, 16  # the meta pass's input: its size changes no gradient's order


def available(package: str) -> bool:
    """Whether a package can be imported, found without importing it (and without importlib.metadata's ~17 ms)."""
    return importlib.util.find_spec(package) is not None


def installed(package: str) -> str | None:
    """The installed version of a package, found without importing it; None when it is not installed."""
    import importlib.metadata

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


def _sub(config: object, *keys: str) -> object:
    """The first of the config's sub-configs that exists (a vision or audio tower keeps its sizes there)."""
    for k in keys:
        sub = getattr(config, k, None)
        if sub is not None:
            return sub
    return config


def _token(config: object, *names: str) -> int:
    """A special token id of the config that an input must hold (0 where the config names none)."""
    for n in names:
        v = getattr(config, n, None)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            return v
    return 0


def _inputs(module: object, device: str = "meta") -> dict | None:
    """Inputs for the model's forward, from its own signature and config: token ids, images of its image size and
    channels, audio features of its mel bins and length, raw audio, and decoder ids for an encoder-decoder. Each
    token row ends with the end-of-sequence id (a classification head pools there and checks it is present)."""
    import inspect

    import torch

    config = getattr(module, "config", None)
    forward = getattr(module, "forward", None)
    if config is None or forward is None:
        return None
    try:
        names = set(inspect.signature(forward).parameters)
    except (TypeError, ValueError):
        return None
    text = _sub(config, "text_config", "decoder")
    ids = torch.zeros(READY_BATCH, READY_SEQ, dtype=torch.long, device=device)
    eos = _token(text, "eos_token_id")
    if device != "meta":
        ids[:, -1] = eos
    out: dict = {}
    main = getattr(module, "main_input_name", "input_ids")
    # Usually one name; a model whose forward needs several inputs names them all in a list (OneFormer's pixel values
    # and task tokens): each one must be known.
    mains = [main] if isinstance(main, str) else list(main)
    if "input_ids" in names and hasattr(module, "get_input_embeddings"):
        out["input_ids"] = ids
    if "pixel_values" in names:
        vision = _sub(config, "vision_config")
        size = getattr(vision, "image_size", None)
        size = size[0] if isinstance(size, (list, tuple)) else size
        if isinstance(size, int):
            chans = getattr(vision, "num_channels", 3)
            out["pixel_values"] = torch.zeros(READY_BATCH, chans, size, size, device=device)
    if "input_features" in names:
        audio = _sub(config, "audio_config", "encoder_config")
        bins, positions = getattr(audio, "num_mel_bins", None), getattr(audio, "max_source_positions", None)
        if isinstance(bins, int) and isinstance(positions, int):  # two frames per position (a stride-2 conv)
            out["input_features"] = torch.zeros(READY_BATCH, bins, 2 * positions, device=device)
    if "input_values" in names:
        out["input_values"] = torch.zeros(READY_BATCH, 16000, device=device)  # one second of 16 kHz audio
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in names:
        start = _token(config, "decoder_start_token_id", "bos_token_id")
        dec = torch.full((READY_BATCH, READY_SEQ), start, dtype=torch.long, device=device)
        if device != "meta":
            dec[:, -1] = eos
        out["decoder_input_ids"] = dec
    if any(m not in out for m in mains):
        return None
    return out


def _first_float(out: object) -> Any:  # a torch tensor, or None
    import torch

    if isinstance(out, torch.Tensor):
        return out if out.is_floating_point() else None
    values = out.values() if isinstance(out, Mapping) else out if isinstance(out, (tuple, list)) else ()
    for v in values:
        found = _first_float(v)
        if found is not None:
            return found
    return None


def _ready_order(module: object, device: str = "meta") -> tuple[tuple[str, ...], str | None]:
    """Parameter names in the order their gradients are accumulated, from one forward and backward pass; with why
    it could not run where it could not."""

    inputs = _inputs(module, device)
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
        except _pass_errors() as exc:
            if attempt or out_of_memory(exc) or not hasattr(config, "_experts_implementation"):
                return (), f"the forward and backward pass failed ({_why(exc)})"
            config._experts_implementation = "batched_mm"  # type: ignore[union-attr]
    return (), None


# Widths a shrunk copy takes: the module tree (layers, experts, which projections exist) is the config's,
# only the sizes of tensors shrink, so the gradient-ready order is the same and the names map one to one.
_WIDTH = 32
_VOCAB = 64
_IMAGE = 64
_HEADS_SMALL = 4
_WIDE = ("hidden_size", "d_model", "n_embd", "embed_dim", "projection_dim", "text_embed_dim", "vision_embed_dim",
         "pooler_hidden_size")
_MLP = ("intermediate_size", "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "d_ff", "n_inner",
        "moe_intermediate_size", "shared_expert_intermediate_size", "decoder_intermediate_size")
_LATENT = ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
_HEADS = ("num_attention_heads", "n_head", "num_heads", "encoder_attention_heads", "decoder_attention_heads")
_TOKENS = ("pad_token_id", "eos_token_id", "bos_token_id", "decoder_start_token_id", "sep_token_id", "cls_token_id")


def _is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _shrunk_dict(d: dict) -> dict:
    """A config dict with small widths: as many attention heads as key/value heads (else 4), head_dim 8, the
    hidden size heads × 8, MLP and latent widths 32, a vocabulary of 64 with the special tokens renumbered into it,
    images of 64 pixels and audio of 64 positions; sub-configs (text, vision, audio) alike."""
    out = dict(d)
    for k, v in d.items():
        if isinstance(v, dict) and ("model_type" in v or k.endswith("_config")):
            out[k] = _shrunk_dict(v)
    counts = [v for k in _HEADS if _is_int(v := d.get(k)) and v > 0]
    kv = d.get("num_key_value_heads")
    heads = max(counts, default=0)
    if counts and _is_int(kv) and kv > 0 and all(c % kv == 0 for c in counts):
        heads = kv  # fewer heads (as many as the key/value heads): same modules, smaller tensors
    elif counts and all(c % _HEADS_SMALL == 0 for c in counts):
        heads = _HEADS_SMALL
    if heads:
        for k in _HEADS:
            if _is_int(d.get(k)) and d[k] > 0:
                out[k] = heads
    head_dim = 8
    if heads and any(_is_int(d.get(k)) for k in _WIDE):
        for k in _WIDE:
            if _is_int(d.get(k)):
                out[k] = heads * head_dim
        for k in ("head_dim", "d_kv"):
            if _is_int(d.get(k)):
                out[k] = head_dim
    for k in _MLP + _LATENT:
        if _is_int(d.get(k)) and d[k] > _WIDTH:
            out[k] = _WIDTH
    # Inputs smaller too (the names stay: only position tables and feature maps shrink): images of at most 64
    # pixels a side, a whole number of patches; audio of 64 positions.
    image, patch = d.get("image_size"), d.get("patch_size")
    if _is_int(image) and image > _IMAGE:
        out["image_size"] = _IMAGE - _IMAGE % patch if _is_int(patch) and 0 < patch <= _IMAGE // 2 else _IMAGE
    if _is_int(d.get("max_source_positions")) and d["max_source_positions"] > _IMAGE:
        out["max_source_positions"] = _IMAGE
    vocab = d.get("vocab_size")
    if _is_int(vocab) and vocab > _VOCAB:
        out["vocab_size"] = _VOCAB
        ids = {k: v if isinstance(v, list) else [v] for k in _TOKENS if (v := d.get(k)) is not None}
        high = sorted({t for v in ids.values() for t in v if _is_int(t) and t >= _VOCAB})
        new = {t: _VOCAB - 1 - i for i, t in enumerate(high)}  # special tokens keep distinct ids in the small table
        for k, v in ids.items():
            small = [new.get(t, t) if _is_int(t) else t for t in v]
            out[k] = small if isinstance(d[k], list) else small[0]
    return out


def _shrunk_order(module: object) -> tuple[tuple[str, ...], str | None]:
    """The gradient-ready order from a shrunk copy of the same class run on the CPU (cheap, and it runs what the
    meta device cannot: ``.item()``, data-dependent branches); its names must equal the model's one to one."""
    import torch

    config: Any = getattr(module, "config", None)
    to_dict = getattr(config, "to_dict", None)
    if not callable(to_dict):
        return (), "no config to shrink"
    model_class: Any = type(module)
    try:
        small_config = type(config).from_dict(_shrunk_dict(to_dict()))
        torch.manual_seed(0)
        with torch.device("cpu"):
            small = model_class(small_config)
    except _pass_errors() as exc:
        return (), f"a shrunk copy could not be built ({_why(exc)})"
    names = [n for n, _ in module.named_parameters()]  # type: ignore[attr-defined]
    if [n for n, _ in small.named_parameters()] != names:
        return (), "a shrunk copy has other parameters than the model"
    for p, q in zip(small.parameters(), module.parameters(), strict=True):  # type: ignore[attr-defined]
        p.requires_grad_(q.requires_grad)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tensors this small gain nothing from threads, and on a busy machine they spin
    try:
        return _ready_order(small, "cpu")
    finally:
        torch.set_num_threads(threads)


# How the gradient-ready order was learnt, as the answer says it.
READY_SHRUNK = "observed: one forward and backward pass of a shrunk copy (same modules, tiny widths) on the CPU"
READY_META = "observed: one forward and backward pass on the meta device"


def _why(exc: BaseException) -> str:
    """Why a pass did not run, in a few words: the error's type, or that it needed more memory than it may take."""
    return f"it needs more than {BUDGET >> 30} GiB" if out_of_memory(exc) else type(exc).__name__


def ready_order(module: object) -> tuple[tuple[str, ...], str]:
    """The gradient-ready order and how it was learnt: a shrunk copy on the CPU (fast; Python's meta kernels are
    not), else the model itself on the meta device; empty with the reasons when neither pass ran. Both passes run
    under a ceiling on memory (``memcap``): a shrunk copy is small only where its sizes are ones explain shrinks."""
    if getattr(module, "config", None) is None:
        return (), f"{READY_RULE}; no pass ran: no example input is known for this module (it has no config)"
    with capped():
        order, why_small = _shrunk_order(module)
    if order:
        return order, READY_SHRUNK
    with capped():
        order, why_meta = _ready_order(module)
    if order:
        return order, READY_META
    return (), f"{READY_RULE}; no pass ran: {why_small}; on the meta device, {why_meta}"


def table_of(module: object, origin: str, source: str, notes: tuple[str, ...] = ()) -> Table:
    """The table of a module built on the meta device."""
    params = tuple(Param(n, tuple(p.shape), _dtype(p), bool(p.requires_grad))
                   for n, p in module.named_parameters())  # type: ignore[attr-defined]
    buffers = tuple(Param(n, tuple(b.shape), _dtype(b), False)
                    for n, b in module.named_buffers())  # type: ignore[attr-defined]
    ready, how = ready_order(module)
    seen = set(ready)
    unused = [p.name for p in params if p.trainable and p.name not in seen]
    noted = list(notes)
    if not ready:
        noted.append(f"gradient-ready order {how}: DDP's rebuilt buckets and ZeRO's gradient buckets rest on it "
                     "(they follow the first backward's order, which only a pass shows)")
    elif unused:
        noted.append(f"{len(unused)} parameters got no gradient in the example pass (used only with other inputs): "
                     "their place in the gradient-ready order is inferred")
    classes = tuple((n, type(m).__name__) for n, m in module.named_modules())  # type: ignore[attr-defined]
    listed = {id(p): n for n, p in module.named_parameters()}  # type: ignore[attr-defined]
    tied = tuple((n, listed[id(p)]) for n, p in module.named_parameters(remove_duplicate=False)  # type: ignore
                 if listed.get(id(p), n) != n)
    return Table(params, buffers, _blocks(module), ready, _tp_plan(module), _embedding(module), origin, source,
                 tuple(noted), ready_how=how, classes=classes, tied=tied)


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


def build_inputs(cfg: dict, path: str, trust_remote_code: bool) -> dict[str, object]:
    """What besides the config itself changes the table ``table_from_config`` builds (the cache's key): whether
    custom code may run, and that code (every .py file beside the config)."""
    out: dict[str, object] = {"trust_remote_code": trust_remote_code}
    if trust_remote_code and isinstance(cfg.get("auto_map"), dict):
        import hashlib

        folder = path if os.path.isdir(path) else os.path.dirname(path) or "."
        h = hashlib.sha256()
        try:
            for name in sorted(n for n in os.listdir(folder) if n.endswith(".py")):
                with open(os.path.join(folder, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
        except OSError as exc:
            h.update(str(exc).encode())
        out["code"] = h.hexdigest()
    return out


def _no_model_index() -> None:
    """Import ``transformers.models`` as a plain package, without running its ``__init__``.

    That ``__init__`` lists what every one of the hundreds of model folders exports, by reading their files, so
    that ``transformers.models.<Class>`` can be looked up lazily: a quarter of a second, and the largest part of a
    cold answer past the import of torch and transformers themselves. Nothing explain imports needs that list:
    transformers reaches a model's modules by their dotted names (``transformers.<Class>``, the auto classes and
    ``CONFIG_MAPPING`` all import ``transformers.models.<folder>.<module>``), which a plain package resolves from
    its path. Where ``transformers.models`` is already imported, it is left as it is."""
    if "transformers.models" in sys.modules:
        return
    import transformers

    spec = importlib.util.find_spec("transformers.models")
    if spec is None or not spec.submodule_search_locations:
        return
    package = importlib.util.module_from_spec(spec)
    sys.modules["transformers.models"] = package
    setattr(transformers, "models", package)  # noqa: B010 (transformers is a lazy module: set it as the import would)


def table_from_config(cfg: dict, path: str, trust_remote_code: bool = False) -> Table:
    """Build the config's model with transformers on the meta device and read its table."""
    if not (available("transformers") and available("torch")):
        raise ExplainError("transformers is not installed")
    _offline()
    import torch
    import transformers

    version = str(transformers.__version__)
    _no_model_index()
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    folder = path if os.path.isdir(path) else os.path.dirname(path) or "."
    model_type = cfg.get("model_type")
    custom = isinstance(cfg.get("auto_map"), dict) and model_type not in CONFIG_MAPPING
    archs = [a for a in cfg.get("architectures") or [] if isinstance(a, str)]
    if custom and not trust_remote_code:
        raise RemoteCodeRefused(f"{path}: its model class is custom code (auto_map) that explain would have to run; "
                                "pass --trust-remote-code to run the code beside config.json")
    if not custom and model_type not in CONFIG_MAPPING:
        raise ExplainError(f"{path}: model_type {model_type!r} is not one transformers {version} knows")
    try:
        if custom:
            config = transformers.AutoConfig.from_pretrained(folder, trust_remote_code=True, local_files_only=True)
            auto = next((k for k, v in cfg["auto_map"].items() if k.startswith("AutoModel")
                         and str(v).endswith("." + (archs[0] if archs else ""))), "AutoModelForCausalLM")
            builder = getattr(transformers, auto)
            with torch.device("meta"):
                model = builder.from_config(config, trust_remote_code=True)
        else:
            config_class = CONFIG_MAPPING[model_type]
            # As transformers reads a config.json (``_dict_from_json_file``): its own JSON extensions decoded, such
            # as save_pretrained's {"__float__": "Infinity"}.
            config = config_class.from_dict(config_class._decode_special_floats(cfg))
            cls = getattr(transformers, archs[0], None) if archs else None
            with torch.device("meta"):
                model = cls(config) if cls is not None else _auto_build(transformers, config)
    except _build_errors() as exc:
        raise ExplainError(f"{path}: transformers {version} could not build this model: {one_line(exc)}") from None
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
    """The first auto class that builds the config's model; for a config no auto class maps (a tower's own config,
    such as a CLIP-style text model's), the model class its modeling module declares for it. An auto class that maps
    the type but cannot build it from this config is passed over too, as transformers' other auto classes would
    build it: it maps ``musicgen`` to ``MusicgenForCausalLM``, made for the decoder's own config, and
    ``ReformerModelWithLMHead`` asserts ``is_decoder``, while ``AutoModel`` builds a default Reformer config. Where
    nothing builds the model, the first such error is raised, else the last "Unrecognized configuration class". A
    mapped class that needs an optional package not installed (OmDet-Turbo's timm backbone) is transformers' refusal:
    the folder's other classes are parts of that model (its decoder), never the model."""
    unknown: BaseException | None = None
    failed: BaseException | None = None
    for name in _AUTO_CLASSES:
        auto = getattr(transformers, name, None)
        if auto is None:
            continue
        try:
            return auto.from_config(config)
        except _build_errors() as exc:
            if type(config) in auto._model_mapping:
                failed = failed or exc
            else:  # "Unrecognized configuration class ... for this kind of AutoModel"
                unknown = exc
    own = _declared_model(config) if not isinstance(failed, ImportError) else None
    if own is not None:
        return own(config)
    raise failed or unknown or ValueError("no auto class of this transformers builds it")


def _declared_model(config: object) -> Any:
    """The model class of the config's own model folder whose ``config_class`` is the config's class (the one named
    after the config, ``Aimv2TextConfig`` -> ``Aimv2TextModel``, first; the modeling module named like the config's
    own module before the folder's others, such as BLIP's ``modeling_blip_text``); None where there is none."""
    import pkgutil

    config_class = type(config)
    package, _, module = config_class.__module__.rpartition(".")
    own = f"modeling_{module.removeprefix('configuration_')}"
    folder = getattr(sys.modules.get(package), "__path__", None)
    if not module.startswith("configuration_") or folder is None:
        return None
    names = sorted((m.name for m in pkgutil.iter_modules(folder) if m.name.startswith("modeling_")),
                   key=lambda n: n != own)
    for name in names:
        try:
            modeling = importlib.import_module(f"{package}.{name}")
        except ImportError:
            continue
        found = [c for c in vars(modeling).values() if isinstance(c, type) and getattr(c, "config_class", None) is
                 config_class and not c.__name__.endswith("PreTrainedModel") and c.__module__ == modeling.__name__]
        named = getattr(modeling, config_class.__name__.removesuffix("Config") + "Model", None)
        if found:
            return named if named in found else found[0]
    return None


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
    except _build_errors() as exc:
        raise ExplainError(f"--module {spec}: the factory failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(model, torch.nn.Module):
        raise ExplainError(f"--module {spec}: the factory returned {type(model).__name__}, not a torch module")
    return table_of(model, MODULE, f"{spec} ({type(model).__name__}) built on the meta device")
