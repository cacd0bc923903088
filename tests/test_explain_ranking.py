"""Of two tensors of one shape, the one the layout communicates comes first (issue 43, section 2): a frozen tensor
has no gradient, so no gradient candidate (a tensor's gradient alone, a run of gradients) ever names one, and the
trainable tensor of the same shape is named instead. Checked on the recorded runs of a partly frozen Llama and a
LoRA adapter (tests/data/explain/truth), and on the case where it changes the answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from needs import torch_and_transformers

from ncclcheck.explain.core import MATCH, explain
from ncclcheck.explain.models import merge, model_from_dict

torch_and_transformers()

sys.path.insert(0, str(Path(__file__).parent.parent / "tools"))
import bench_explain  # noqa: E402

TRUTH = Path(__file__).parent / "data" / "explain" / "truth"
PARTLY_FROZEN = sorted(TRUTH.glob("*-frozen-w*.json")) + sorted(TRUTH.glob("*-lora-w*.json"))
GRADIENTS = ("parameter", "gradient_run", "ddp_bucket", "zero_bucket")


def _setting(path: Path):
    run = json.loads(path.read_text())
    table = bench_explain.table_for(run, "transformers")
    m = merge(model_from_dict(run["config"], run["model"]), batch=run["batch"], seq=run["seq"],
              world_size=run["world_size"])
    return run, table, m


@pytest.mark.parametrize("path", PARTLY_FROZEN, ids=lambda p: p.stem)
def test_no_gradient_candidate_names_a_frozen_tensor_on_recorded_runs(path):
    run, table, m = _setting(path)
    frozen = {p.name for p in table.params if not p.trainable}
    assert frozen
    for c in bench_explain.cases(run):
        for strategy in (None, bench_explain.STRATEGY[run["strategy"]]):
            e = explain(c["numel_in"], m, c["numel_out"], c["op"], "float32", strategy, table)
            for cand in e.candidates:
                if cand.exact and cand.kind in GRADIENTS and "all_reduce" in c["op"]:
                    assert not frozen & set(cand.params), (c, cand.description)


def test_a_frozen_embedding_is_not_named_before_the_trainable_head_of_its_shape():
    """The partly frozen Llama's embedding and head are both 4,001 × 176; only the head has a gradient. An
    all_reduce of 704,176 elements asked with --strategy tp (no bucket forms it) named the embedding's gradient
    first before; the head's now, and the embedding never as a gradient."""
    _, table, m = _setting(TRUTH / "ddp-frozen-w2.json")
    embed, head = table.params[0], table.params[-1]
    assert (embed.name, embed.trainable, head.name, head.trainable) == (
        "model.embed_tokens.weight", False, "lm_head.weight", True)
    assert embed.numel == head.numel == 704_176
    for strategy in ("tp", "fsdp2", None):
        e = explain(704_176, m, None, "gloo:all_reduce", "float32", strategy, table)
        matches = [c for c in e.candidates if c.exact and c.verdict == MATCH]
        assert matches[0].params == ("lm_head.weight",), strategy
        assert all(embed.name not in c.params for c in e.candidates if c.exact), strategy
    # A broadcast copies values, which a frozen tensor has: both stay candidates there.
    e = explain(704_176, m, None, "gloo:broadcast", "float32", None, table)
    assert {c.params for c in e.candidates if c.exact} >= {(embed.name,), (head.name,)}


def test_nested_block_indices_are_generic_alike():
    """Swin's blocks sit inside stages (``layers.0.blocks.1``): both indices are generic, and making a name generic
    twice changes nothing (the bench compares names made generic once with names made generic again)."""
    from ncclcheck.explain.core import generic

    names = ("swin.encoder.layers.0.blocks.1.mlp.fc1.weight", "model.layers.12.self_attn.q_proj.weight")
    assert generic(names) == ("swin.encoder.layers.N.blocks.N.mlp.fc1.weight", "model.layers.N.self_attn.q_proj.weight")
    assert generic(generic(names)) == generic(names)
