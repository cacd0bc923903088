"""Where explain's parameter table comes from, best first: the user's own module, a checkpoint's headers, the
config's model built by transformers, the built-in layouts. Each answer says which one it used."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from ncclcheck.explain.counts import ExplainError
from ncclcheck.explain.models import Model, model_from_dict, read_config
from ncclcheck.explain.table import Table

HF_HINT = "pip install 'ncclcheck[hf]'"


@dataclass(frozen=True)
class Loaded:
    """The model's shape facts, its table (None: the built-in layouts) and what the user should know about both."""

    model: Model
    table: Table | None
    warnings: tuple[str, ...] = ()


def load(base: Model, config: str | None = None, checkpoint: str | None = None, module: str | None = None,
         trust_remote_code: bool = False, use_cache: bool = True) -> Loaded:
    """Read what the user gave. A config refused for custom code, an unreadable checkpoint and a failing module
    raise ExplainError; a config transformers cannot build falls back to the built-in layouts, with a warning. A
    table built from a config is kept in the cache (``cache.py``) unless ``use_cache`` is off."""
    from ncclcheck.explain.frommodel import RemoteCodeRefused, available, table_from_factory

    if checkpoint and module:
        raise ExplainError("give --checkpoint or --module, not both")
    warnings: list[str] = []
    cfg = path = None
    if config is None and checkpoint and os.path.isdir(checkpoint) and os.path.isfile(
            os.path.join(checkpoint, "config.json")):
        config = checkpoint  # a checkpoint folder's own config gives the shape facts
    if config is not None:
        cfg, path = read_config(config)
        base = model_from_dict(cfg, path)
    if module:
        table = table_from_factory(module)
        width = table.embedding_width() if base.hidden is None else None
        if width is not None:  # a module has no config: H is the embedding's width (sequence-parallel activations)
            base = replace(base, hidden=width[1])
            table = replace(table, notes=(*table.notes, f"hidden size H = {width[1]:,}: the width of the input "
                                                        f"embedding {width[0]}"))
        return Loaded(base, table, tuple(warnings))
    if checkpoint:
        from ncclcheck.explain.checkpoint import table_from_checkpoint

        return Loaded(base, table_from_checkpoint(checkpoint), tuple(warnings))
    if cfg is None or path is None:
        return Loaded(base, None, tuple(warnings))
    if not (available("transformers") and available("torch")):
        warnings.append(f"{path}: transformers is not installed, so the built-in layouts (Llama-style families) are "
                        f"used instead of the model's own table; {HF_HINT}")
        return Loaded(replace(base, unbuilt=f"transformers is not installed; {HF_HINT} builds it"), None,
                      tuple(warnings))
    try:
        return Loaded(base, _from_config(cfg, path, trust_remote_code, use_cache, warnings), tuple(warnings))
    except RemoteCodeRefused:
        raise
    except ExplainError as exc:
        warnings.append(f"{exc}; the built-in layouts are used instead")
        return Loaded(replace(base, unbuilt=str(exc).removeprefix(f"{path}: ")), None, tuple(warnings))


def _from_config(cfg: dict, path: str, trust_remote_code: bool, use_cache: bool, warnings: list[str]) -> Table:
    """The config's table from the cache when it holds one, else built by transformers (and then kept)."""
    from ncclcheck.explain import cache
    from ncclcheck.explain.frommodel import build_inputs, table_from_config

    digest = cache.key(cfg, build_inputs(cfg, path, trust_remote_code)) if use_cache else None
    if digest:
        table, note = cache.load(digest)
        if note:
            warnings.append(note)
        if table is not None:
            return table
    table = table_from_config(cfg, path, trust_remote_code)
    if digest:
        cache.store(digest, table)
    return table
