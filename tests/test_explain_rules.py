"""The framework rules beyond the defaults, each checked on a recorded run (tests/data/explain/truth, gloo on CPU):
DDP's find_unused_parameters and static_graph, HSDP on a 2-D mesh, frozen parameters and LoRA adapters, blocks
named by the user's wrap policy, and the tensor-parallel plan's gathering styles."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from needs import torch_and_transformers
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.explain.adapt import freeze, parse_mesh, with_blocks, with_lora
from ncclcheck.explain.core import MATCH, explain
from ncclcheck.explain.counts import ExplainError
from ncclcheck.explain.models import merge, model_from_dict
from ncclcheck.explain.params import Param
from ncclcheck.explain.table import Table

sys.path.insert(0, str(Path(__file__).parent.parent / "tools"))
import bench_explain  # noqa: E402

DATA = Path(__file__).parent / "data" / "explain"
TRUTH = DATA / "truth"

torch_and_transformers()


def _run(name: str) -> dict:
    return json.loads((TRUTH / f"{name}.json").read_text())


def _first(run: dict, c: dict, strategy: str | None = "from the run", mesh=None):
    table = bench_explain.table_for(run, "transformers")
    m = merge(model_from_dict(run["config"], run["model"]), batch=run["batch"], seq=run["seq"],
              world_size=run["world_size"])
    strat = bench_explain.STRATEGY[run["strategy"]] if strategy == "from the run" else strategy
    e = explain(c["numel_in"], m, c["numel_out"], c["op"], "float32", strat, table, run["layout"].get("bucket_cap_mb"),
                mesh, bool(run["layout"].get("find_unused_parameters")))
    return next((x for x in e.candidates if x.exact and x.verdict == MATCH), None)


def test_find_unused_parameters_forms_buckets_in_registration_order_reversed_and_never_rebuilt():
    """Llama, bucket_cap_mb=1 (262,144 float32 elements): in registration order the embedding (7,936,744) closes the
    first bucket; layer 0's q, k, v, o and gate (373,240), then up and down (341,744); layer 1's with the two norms of
    layer 0 before them (373,736); up and down again; the last norms, the final norm and the head (7,937,488). The
    reducer gets the list reversed, so its bucket 0 is the head's. Both iterations are the same: never rebuilt, and
    no bucket-order sync is broadcast."""
    run = _run("ddp_unused_cap1-llama-w2")
    calls = run["layout"]["bucket_calls"]
    sizes = [c["numel"] for c in calls[: len(calls) // 2]]
    assert sizes == [7937488, 341744, 373736, 341744, 373240, 7936744]
    assert calls[: len(calls) // 2] == calls[len(calls) // 2:]
    assert not [c for c in run["collectives"] if c["op"] == "gloo:broadcast" and c["dtype"] == "int32"]
    for c in bench_explain.cases(run):
        if c["truth"]["kind"] == "ddp_bucket":
            first = _first(run, c)
            assert bench_explain.right(first, c["truth"]), (c["numel_in"], first and first.description)
    first = _first(run, {"numel_in": 373736, "numel_out": 373736, "op": "gloo:all_reduce"})
    assert "find_unused_parameters=True" in first.description and "registration order" in first.description


def test_the_used_parameter_map_is_one_int32_per_trainable_parameter():
    """21 parameters in the Llama; 8 LoRA matrices in the adapted one (its 21 base weights are frozen)."""
    for name, count in (("ddp_unused-llama-w2", 21), ("ddp_unused-lora-w2", 8)):
        run = _run(name)
        maps = [c for c in run["collectives"] if c["truth"]["what"] == "used-parameter map"]
        assert maps and {(c["numel_in"], c["dtype"]) for c in maps} == {(count, "int32")}
        first = _first(run, maps[0])
        assert first.kind == "metadata" and "used-parameter map" in first.description


def test_static_graph_keeps_one_bucket_for_two_iterations_and_sends_the_map_once():
    run = _run("ddp_static-llama-w2")
    buckets = [c["numel_in"] for c in run["collectives"] if c["truth"]["kind"] == "ddp_bucket"]
    assert buckets == [17304696, 17304696]
    assert [c["numel_in"] for c in run["collectives"] if c["dtype"] == "int32"] == [21]
    first = _first(run, {"numel_in": 17304696, "numel_out": 17304696, "op": "gloo:all_reduce"})
    assert "static_graph, the first two iterations" in first.description


def test_hsdp_gathers_in_the_shard_group_and_all_reduces_each_units_shard_across_replicas():
    """2 x 2 mesh: Llama layer 0 sharded over 2 ranks; its gradient shard all-reduced over the 2 replicas."""
    run = _run("hsdp-llama-w4")
    assert run["layout"]["mesh"] == [2, 2]
    across = [c for c in run["collectives"] if c["truth"]["what"].startswith("HSDP replicate")]
    assert across
    for mesh in ((2, 2), None):  # given, and found among the splits of a group of 4
        first = _first(run, across[0], mesh=mesh)
        assert bench_explain.right(first, across[0]["truth"]) and "mesh dimension 0" in first.description
    gather = next(c for c in run["collectives"] if c["op"] == "gloo:all_gather" and c["truth"]["kind"] == "fsdp2_unit")
    assert gather["numel_out"] == 2 * gather["numel_in"]
    assert "mesh dimension 1, 2 ranks" in _first(run, gather, mesh=(2, 2)).description


def test_fsdp1_hybrid_shard_all_reduces_the_flat_shard_across_replicas():
    run = _run("fsdp1_hybrid-llama-w4")
    across = [c for c in run["collectives"] if c["truth"]["what"].startswith("HYBRID_SHARD")]
    assert across
    first = _first(run, across[0], mesh=(2, 2))
    assert bench_explain.right(first, across[0]["truth"]) and "HYBRID_SHARD" in first.description


def test_fsdp2_reduces_only_the_gradients_a_unit_has():
    """Frozen: the embedding, all of layer 0 and layer 1's attention. Layer 1 keeps gate, up (467 x 176: 234 x 176
    per rank) and down (176 x 467: 88 x 467) and its two norms (88 each): 123,640 per rank, 247,280 reduced (gloo
    all-reduces it whole). Layer 0 is gathered and never reduced."""
    run = _run("fsdp2-frozen-w2")
    grads = [c for c in run["collectives"] if c["truth"]["what"] == "FSDP2 gradients of unit model.layers.1"]
    assert {c["numel_in"] for c in grads} == {247280}
    first = _first(run, grads[0])
    assert first.kind == "fsdp2_unit" and "5 parameters (the 4 frozen ones are gathered" in first.description
    assert not [c for c in run["collectives"] if c["truth"]["what"] == "FSDP2 gradients of unit model.layers.0"]


def test_a_lora_adapter_config_gives_peft_s_own_table_without_peft():
    run = _run("ddp-lora-w2")
    table = bench_explain.table_for(run, "transformers")
    assert [[p.name, list(p.shape)] for p in table.params] == [[n, s] for n, s, _ in run["params"]]
    assert {p.name for p in table.params if not p.trainable} == set(run["frozen"])
    assert "LoRA adapter from adapter_config.json: r=8, lora_alpha=16, 4 layers (q_proj, v_proj)" in table.notes[-1]


def test_the_adapter_config_beside_the_config_is_read(tmp_path):
    run = _run("ddp_unused-lora-w2")
    (tmp_path / "config.json").write_text(json.dumps(run["config"]))
    (tmp_path / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", **run["adapter"]}))
    r = CliRunner().invoke(app, ["explain", "--config", str(tmp_path), "--numel", "9856", "--op", "ALLREDUCE",
                                 "--strategy", "ddp", "--json"])
    assert r.exit_code == 0, r.stderr
    first = json.loads(r.stdout)["explanations"][0]["candidates"][0]
    assert first["kind"] == "ddp_bucket" and "all 8 gradients in one bucket" in first["description"]
    assert "identical units" not in first["description"]


def test_frozen_patterns_and_their_errors():
    table = Table((Param("a.weight", (4, 4)), Param("b.weight", (4,))))
    assert [p.trainable for p in freeze(table, ["a.*"]).params] == [False, True]
    with pytest.raises(ExplainError, match="matches no parameter"):
        freeze(table, ["c.*"])


def test_blocks_in_a_sequential_are_units_when_the_policy_names_their_class(monkeypatch):
    """ConvNet: stage1 and stage2 are nn.Sequential of two Bottlenecks each; the first Bottleneck (24 channels,
    13 wide) holds conv1 312, bn1 26, conv2 1,521, bn2 26, conv3 312, bn3 48 = 2,245 parameters: FSDP1 pads it to 2,246
    and gathers 1,123 per rank at world 2; FSDP2 pads each dim 0 (13 to 14, 24 stays): 1,195 per rank."""
    monkeypatch.chdir(DATA / "module")
    for n, kind in ((1123, "fsdp_unit"), (1195, "fsdp2_unit")):
        r = CliRunner().invoke(app, ["explain", "--module", "convnet:build", "--block-class", "Bottleneck", "--numel",
                                     str(n), "--numel-out", str(2 * n), "--op", "_ALLGATHER_BASE", "--json"])
        assert r.exit_code == 0, r.stderr
        first = json.loads(r.stdout)["explanations"][0]["candidates"][0]
        assert first["kind"] == kind and "block stage1.0" in first["description"], first
    r = CliRunner().invoke(app, ["explain", "--module", "convnet:build", "--block-class", "Nope", "--numel", "9"])
    assert r.exit_code == 2 and "--block-class Nope: no module of that class" in r.stderr


def test_a_block_holding_a_tied_weight_is_not_a_unit_of_its_own():
    table = Table((Param("embed.weight", (10, 4)), Param("layers.0.w", (4, 4))),
                  classes=(("", "M"), ("embed", "Embedding"), ("layers.0", "Layer"), ("head", "Linear")),
                  tied=(("head.weight", "embed.weight"),))
    assert with_blocks(table, ["Embedding", "Layer"]).blocks == ("layers.0",)


@pytest.mark.parametrize("text", ["2", "2x", "0x4", "axb", "2x2x2"])
def test_a_bad_mesh_is_one_clear_error(text):
    with pytest.raises(ExplainError, match="expected REPLICAxSHARD"):
        parse_mesh(text)
    r = CliRunner().invoke(app, ["explain", "--model", "llama-3-8b", "--numel", "9", "--mesh", text])
    assert r.exit_code == 2 and "expected REPLICAxSHARD" in r.stderr


def test_a_lora_target_that_matches_nothing_is_refused():
    table = Table((Param("m.q.weight", (4, 4)),), classes=(("m.q", "Linear"),))
    with pytest.raises(ExplainError, match="matches no linear layer"):
        with_lora(table, {"r": 2, "target_modules": ["k"]}, "adapter_config.json")
    assert [p.name for p in with_lora(table, {"r": 2, "target_modules": "m\\.q"}, "a").params] == [
        "base_model.model.m.q.base_layer.weight", "base_model.model.m.q.lora_A.default.weight",
        "base_model.model.m.q.lora_B.default.weight"]
