"""What the user's training setup changes in a model's table: frozen parameters, a LoRA adapter, the blocks their
wrap policy names.

Each is a plain function from one ``Table`` to another, so it applies to any source (a model built from its config,
the user's module, a checkpoint) and needs neither torch nor peft. The LoRA rule is PEFT's (peft/tuners/lora): every
targeted linear layer keeps its weight as ``<layer>.base_layer.weight`` and gains ``<layer>.lora_A.default.weight``
[r, in] and ``<layer>.lora_B.default.weight`` [out, r] right after it; the model is wrapped twice, so every name
starts with ``base_model.model.``; only the adapter (and, with ``bias``, the biases it names) gets gradients.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import re
from collections.abc import Sequence
from dataclasses import replace

from ncclcheck.explain.counts import ExplainError
from ncclcheck.explain.params import Param
from ncclcheck.explain.table import Table

ADAPTER_FILE = "adapter_config.json"
PEFT_PREFIX = "base_model.model."
_LINEAR = ("Linear", "Conv1D")  # the layer classes a LoRA adapter wraps as linear (GPT-2's Conv1D is [in, out])


def freeze(table: Table, patterns: Sequence[str]) -> Table:
    """Parameters whose name matches a glob pattern (``model.layers.0.*``) get no gradient."""
    if not patterns:
        return table
    hit = [p.name for p in table.params if any(fnmatch.fnmatchcase(p.name, pat) for pat in patterns)]
    if not hit:
        raise ExplainError(f"--frozen {' '.join(patterns)}: matches no parameter of the model")
    frozen = set(hit)
    params = tuple(replace(p, trainable=False) if p.name in frozen else p for p in table.params)
    return replace(table, params=params, notes=(*table.notes, f"{len(hit)} parameters frozen (--frozen)"))


def read_adapter(path: str) -> dict:
    """A PEFT adapter config (the file, or the folder holding adapter_config.json)."""
    file = os.path.join(path, ADAPTER_FILE) if os.path.isdir(path) else path
    try:
        with open(file, encoding="utf-8") as f:
            cfg = json.load(f)
    except OSError as exc:
        raise ExplainError(f"{file}: cannot read ({exc.strerror or exc})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ExplainError(f"{file}: not JSON ({exc})") from None
    if not isinstance(cfg, dict):
        raise ExplainError(f"{file}: not an adapter config (a JSON object)")
    kind = str(cfg.get("peft_type") or "LORA").upper()
    if kind != "LORA":
        raise ExplainError(f"{file}: peft_type {kind} is not one explain knows (LORA)")
    if not isinstance(cfg.get("r"), int) or cfg["r"] < 1 or not cfg.get("target_modules"):
        raise ExplainError(f"{file}: a LoRA adapter config needs r (a positive integer) and target_modules")
    return cfg


def adapter_beside(config: str | None) -> str | None:
    """The adapter config in the folder of the base model's config, if there is one."""
    if not config:
        return None
    folder = config if os.path.isdir(config) else os.path.dirname(config) or "."
    found = os.path.join(folder, ADAPTER_FILE)
    return found if os.path.isfile(found) else None


def _targeted(layer: str, targets: object, classes: dict[str, str], head: str) -> bool:
    """PEFT's match of a layer path against target_modules: a regex matched whole, a list of names matched at the
    end of the path, or "all-linear" (every linear layer but the output head)."""
    if classes and classes.get(layer) not in _LINEAR:
        return False
    if isinstance(targets, str):
        if targets.lower().replace("_", "-") == "all-linear":
            return layer != head and layer.rpartition(".")[2] != "lm_head"
        return re.fullmatch(targets, layer) is not None
    return any(layer == t or layer.endswith("." + t) for t in targets)  # type: ignore[attr-defined]


def with_lora(table: Table, cfg: dict, where: str) -> Table:
    """The table PEFT's get_peft_model gives for this LoRA adapter config."""
    r, targets = cfg["r"], cfg["target_modules"]
    bias = cfg.get("bias") or "none"
    only = cfg.get("layers_to_transform")
    only = {only} if isinstance(only, int) else set(only or ())
    classes = dict(table.classes)
    weights = {p.name.rpartition(".")[0]: p for p in table.params if p.name.endswith(".weight") and len(p.shape) == 2}
    head = table.params[-1].name.rpartition(".")[0] if table.params else ""
    layers = {layer for layer in weights if _targeted(layer, targets, classes, head)
              and (not only or any(f".{k}." in f".{layer}." for k in only))}
    if not layers:
        raise ExplainError(f"{where}: target_modules {targets!r} matches no linear layer of the model")
    out: list[Param] = []
    adapters: dict[str, tuple[str, str]] = {}  # layer -> (lora_A name, lora_B name)
    for k, p in enumerate(table.params):
        layer, _, leaf = p.name.rpartition(".")
        if layer not in layers:
            out.append(replace(p, name=PEFT_PREFIX + p.name, trainable=bias == "all" and leaf == "bias"))
            continue
        out.append(replace(p, name=f"{PEFT_PREFIX}{layer}.base_layer.{leaf}", trainable=bias != "none" and leaf == "bias"))
        following = table.params[k + 1].name.rpartition(".")[0] if k + 1 < len(table.params) else None
        if following != layer:  # base_layer's weight and bias come first, then lora_A and lora_B
            w = weights[layer]
            fan_out, fan_in = (w.shape[1], w.shape[0]) if classes.get(layer) == "Conv1D" else w.shape[:2]
            a, b = f"{PEFT_PREFIX}{layer}.lora_A.default.weight", f"{PEFT_PREFIX}{layer}.lora_B.default.weight"
            out += [Param(a, (r, fan_in), w.dtype, True), Param(b, (fan_out, r), w.dtype, True)]
            adapters[layer] = (a, b)
    ready: list[str] = []
    for name in table.ready:  # the adapter's gradients are ready when its layer's backward runs: B, then A
        layer = name.rpartition(".")[0]
        if layer in adapters and name.endswith(".weight"):
            ready += [adapters[layer][1], adapters[layer][0]]
        else:
            ready.append(PEFT_PREFIX + name)
    alpha = cfg.get("lora_alpha", r)
    note = (f"LoRA adapter from {where}: r={r}, lora_alpha={alpha}, {len(layers)} layers "
            f"({', '.join(sorted({x.rpartition('.')[2] for x in layers}))}); the base model is frozen")
    if cfg.get("modules_to_save"):
        note += f"; modules_to_save ({', '.join(cfg['modules_to_save'])}) not modelled"
    if cfg.get("use_dora"):
        note += "; DoRA's magnitude vectors not modelled"
    return replace(table, params=tuple(out),
                   buffers=tuple(replace(b, name=PEFT_PREFIX + b.name) for b in table.buffers),
                   blocks=tuple(PEFT_PREFIX + b for b in table.blocks), ready=tuple(ready),
                   embedding=PEFT_PREFIX + table.embedding if table.embedding else "",
                   source=f"{table.source}, with a LoRA adapter", notes=(*table.notes, note),
                   classes=tuple((PEFT_PREFIX + n if n else n, c) for n, c in table.classes),
                   tied=tuple((PEFT_PREFIX + a, PEFT_PREFIX + b) for a, b in table.tied))


def with_blocks(table: Table, names: Sequence[str]) -> Table:
    """The units a wrap policy naming these classes forms (``ModuleWrapPolicy({Bottleneck})``, fully_shard on each
    such module), wherever they sit (a ModuleList, an nn.Sequential, any container). A block holding a tied weight
    whose other name lies outside it is not a unit of its own: FSDP2 cannot shard one tensor into two units."""
    if not names:
        return table
    if not table.classes:
        raise ExplainError("--block-class needs the model's module tree: give --config (with transformers) or --module")
    wanted = set(names)
    found = [n for n, c in table.classes if n and c in wanted]
    if not found:
        known = sorted({c for _, c in table.classes})
        raise ExplainError(f"--block-class {', '.join(names)}: no module of that class (the model has: "
                           f"{', '.join(known[:30])}{', ...' if len(known) > 30 else ''})")

    def inside(name: str, block: str) -> bool:
        return name.startswith(block + ".")

    kept = [b for b in found if not any(inside(a, b) != inside(c, b) for a, c in table.tied)]
    notes = list(table.notes)
    if len(kept) < len(found):
        notes.append(f"{len(found) - len(kept)} modules of the named classes hold a weight tied to one outside them, "
                     "so they stay in their parent's unit")
    return replace(table, blocks=tuple(kept), notes=tuple(notes))


# The keys under which a launcher's config names the classes to wrap: Accelerate's YAML and its launcher flag
# (``fsdp_transformer_layer_cls_to_wrap``), the Trainer's ``fsdp_config`` (the same without ``fsdp_``, which the
# Trainer strips), FullyShardedDataParallelPlugin's field and its environment variable (``FSDP_TRANSFORMER_CLS_TO_WRAP``).
_CLASS_KEYS = ("fsdp_transformer_layer_cls_to_wrap", "transformer_layer_cls_to_wrap", "transformer_cls_names_to_wrap",
               "FSDP_TRANSFORMER_CLS_TO_WRAP")
# torch's policies that name classes (torch/distributed/fsdp/wrap.py): ModuleWrapPolicy(module_classes) and
# transformer_auto_wrap_policy(transformer_layer_cls=...), directly or through functools.partial.
_POLICY_ARGS = (re.compile(r"\b(?:transformer_layer_cls|module_classes)\s*=\s*(.*)", re.DOTALL),
                re.compile(r"\bModuleWrapPolicy\s*\((.*)", re.DOTALL))
# Policies that wrap by something other than a class: explain cannot tell their units from the model's tree.
_UNMODELLED = {"size_based_auto_wrap_policy": "a size-based policy wraps by parameter count",
               "size_based_wrap": "a size-based policy wraps by parameter count",
               "lambda_auto_wrap_policy": "a lambda policy wraps whatever its function says",
               "CustomPolicy": "a custom policy wraps whatever its function says",
               "always_wrap_policy": "always_wrap_policy wraps every module",
               "no_wrap": "NO_WRAP makes the whole model one unit"}
# A key and its value: ``key: v`` (YAML), ``"key": v,`` (JSON), ``KEY=v`` (environment), ``--key v`` or
# ``--key=v`` (the launcher's flag).
_KEY_LINE = re.compile(r"^\s*(?:--)?[\"']?(" + "|".join(_CLASS_KEYS) + r")[\"']?(?:\s*[:=]|\s)\s*(.*?)\s*,?\s*$")
_POLICY_LINE = re.compile(r"^\s*[\"']?(?:fsdp_)?auto_wrap_policy[\"']?\s*[:=]\s*[\"']?(\w+)", re.IGNORECASE)
_ITEM = re.compile(r"^\s*-\s*[\"']?([\w.]+)[\"']?\s*$")
_CALLS = re.compile(r"\b(?:set|frozenset|tuple|list)\s*\(")  # {A} may be written set([A])


def _class_names(value: str, where: str) -> tuple[str, ...]:
    """Class names from a written value: ``{LlamaDecoderLayer}``, ``[A, B]``, ``"A,B"``, ``set([A])``, dotted
    (``transformers.models.llama.modeling_llama.LlamaDecoderLayer``, of which the class's own name counts)."""
    text = _CALLS.sub("", value)
    depth, end = 0, len(text)
    for k, ch in enumerate(text):  # a policy's argument ends where its call's bracket closes
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth < 0 or (depth == 0 and ch in ";#\n"):
            end = k
            break
    items = [i.strip().strip("\"'").strip() for i in re.split(r"[,\s]+", re.sub(r"[()\[\]{}]", " ", text[:end]))]
    names = tuple(dict.fromkeys(i.rpartition(".")[2] for i in items if i))
    bad = [n for n in names if not n.isidentifier()]
    if bad or not names:
        raise ExplainError(f"{where}: cannot read class names from {value.strip()!r} (expected names such as "
                           "{LlamaDecoderLayer} or LlamaDecoderLayer,MistralDecoderLayer)")
    return names


def _items(value: object) -> list[tuple[str, object]]:
    """Every key and value of a JSON object and the objects inside it (a Trainer's ``fsdp_config`` may sit inside
    its training arguments), depth first."""
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    out: list[tuple[str, object]] = []
    for k, v in value.items():
        out += _items(v) if isinstance(v, dict) else [(str(k), v)]
    return out


def _flat(text: str) -> str:
    """A JSON object's keys and values one a line, as YAML writes them (a JSON file or ``--fsdp_config '{...}'`` may
    be one line); any other text as it is."""
    with contextlib.suppress(ValueError):
        return "\n".join(f"{k}: {json.dumps(v) if isinstance(v, list) else v}" for k, v in _items(json.loads(text)))
    return text


def _policy_argument(text: str) -> str | None:
    """What follows the classes' keyword (or, without one, ModuleWrapPolicy's opening bracket)."""
    for pattern in _POLICY_ARGS:
        m = pattern.search(text)
        if m:
            return m.group(1)
    return None


def _unmodelled(text: str, where: str) -> None:
    for word in re.findall(r"\w+", text):
        why = _UNMODELLED.get(word) or _UNMODELLED.get(word.lower())
        if why:
            raise ExplainError(f"{where}: {why}, which explain does not model; name the classes it wraps "
                               "(--block-class)")


def _from_lines(lines: Sequence[str], where: str) -> tuple[str, ...] | None:
    """The classes a YAML or JSON text names under one of ``_CLASS_KEYS`` (a value on the key's line, a flow or
    JSON list, or a block list of ``- Name`` lines after it); None where no such key is there."""
    for k, line in enumerate(lines):
        m = _KEY_LINE.match(line)
        if not m:
            continue
        value = m.group(2)
        if value in ("", "["):  # a block list, or a JSON list over several lines
            rest = []
            for following in lines[k + 1:]:
                item = _ITEM.match(following) or re.match(r"^\s*[\"']([\w.]+)[\"']\s*,?\s*$", following)
                if not item:
                    break
                rest.append(item.group(1))
            value = ",".join(rest)
        if value.lower() in ("null", "none", "~", ""):
            return None
        return _class_names(value, where)
    return None


def parse_wrap_policy(text: str) -> tuple[str, ...]:
    """The classes an FSDP auto-wrap policy names, read as the user wrote it, never evaluated:
    ``transformer_auto_wrap_policy(transformer_layer_cls={LlamaDecoderLayer})`` (or through functools.partial),
    ``ModuleWrapPolicy({Bottleneck})``, a launcher's key (``fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer``,
    ``"transformer_layer_cls_to_wrap": ["A", "B"]``, ``FSDP_TRANSFORMER_CLS_TO_WRAP=A,B``), a bare list of names
    (``A,B``), or the file that holds one of these (an Accelerate YAML, a Trainer ``fsdp_config`` JSON, a script).

    An empty result means a transformer-based policy that names no class (Accelerate's TRANSFORMER_BASED_WRAP
    alone): it wraps the model's ``_no_split_modules``, the blocks the table already holds."""
    where = f"--wrap-policy {text.strip()!r}"
    if os.path.isfile(text):
        try:
            with open(text, encoding="utf-8") as f:
                body = f.read()
        except OSError as exc:
            raise ExplainError(f"{text}: cannot read ({exc.strerror or exc})") from None
        except UnicodeDecodeError:
            raise ExplainError(f"{text}: not a text file") from None
        body = _flat(body)
        named = [m.group(1) for line in body.splitlines() if (m := _POLICY_LINE.match(line))]
        if named and named[0].upper() != "TRANSFORMER_BASED_WRAP":  # the launcher reads the classes only then
            _unmodelled(named[0], where)
        found = _from_lines(body.splitlines(), where)
        if found is not None:
            return found
        policy = _policy_argument(body)
        if policy is not None:
            return _class_names(policy, where)
        if named:
            return ()
        raise ExplainError(f"{text}: names no class to wrap (no {', '.join(_CLASS_KEYS[:2])}, "
                           "transformer_auto_wrap_policy or ModuleWrapPolicy)")
    found = _from_lines(_flat(text).splitlines() if text.lstrip().startswith("{") else [text], where)
    if found is not None:
        return found
    policy = _policy_argument(text)
    if policy is not None:
        return _class_names(policy, where)
    if text.strip().upper() in ("TRANSFORMER_BASED_WRAP", "TRANSFORMER_AUTO_WRAP_POLICY"):
        return ()
    _unmodelled(text, where)
    return _class_names(text, where)


def customise(table: Table, frozen: Sequence[str] = (), adapter: str | None = None,
              block_classes: Sequence[str] = ()) -> Table:
    """The table as the user trains it: their wrap policy's blocks, then the LoRA adapter, then frozen patterns
    (named as the adapter names them)."""
    table = with_blocks(table, block_classes)
    if adapter:
        table = with_lora(table, read_adapter(adapter), adapter)
    return freeze(table, frozen)


def as_trained(table: Table, config: str | None = None, frozen: Sequence[str] = (), adapter: str | None = None,
               block_classes: Sequence[str] = (), wrap_policy: str | None = None) -> Table:
    """The table under the user's training options, as ``explain`` and ``analyze-log --config`` both take them:
    the classes ``--block-class`` names and those ``--wrap-policy`` names, the adapter given (else one beside the
    config) and the frozen patterns."""
    classes = list(block_classes)
    if wrap_policy:
        classes += [c for c in parse_wrap_policy(wrap_policy) if c not in classes]
    return customise(table, frozen, adapter or adapter_beside(config), classes)


def parse_mesh(text: str) -> tuple[int, int]:
    """``2x4`` (replicate x shard), as HSDP's DeviceMesh is laid out."""
    parts = re.split(r"\s*[x×*,]\s*", text.strip().lower())
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ExplainError(f"--mesh {text}: expected REPLICAxSHARD, such as 2x4")
    return int(parts[0]), int(parts[1])
