"""The layouts people combine, each checked on a recorded run (tests/data/explain/truth, gloo on CPU;
tools/explain_layout_runs.py): pipelines (torch.distributed.pipelining, GPipe and 1F1B), 2-D TP x FSDP2 and
DeepSpeed ZeRO."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from needs import torch_and_transformers
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.explain.core import MATCH, explain
from ncclcheck.explain.layouts.pp import microbatch_rows
from ncclcheck.explain.models import merge, model_from_dict
from ncclcheck.explain.ops import known_strategy, strategy_allows

sys.path.insert(0, str(Path(__file__).parent.parent / "tools"))
import bench_explain  # noqa: E402

TRUTH = Path(__file__).parent / "data" / "explain" / "truth"
runner = CliRunner()

torch_and_transformers()


def _run(name: str) -> dict:
    return json.loads((TRUTH / f"{name}.json").read_text())


def _explain(run: dict, n: int, op: str, dtype: str = "float32", strategy: str | None = None, pipeline=None,
             numel_out: int | None = None, tp: int | None = None):
    table = bench_explain.table_for(run, "transformers")
    m = merge(model_from_dict(run["config"], run["model"]), batch=run["batch"], seq=run["seq"],
              world_size=run["world_size"], tp=tp)
    return explain(n, m, numel_out, op, dtype, strategy, table, pipeline=pipeline)


def _first(e):
    return next((x for x in e.candidates if x.exact and x.verdict == MATCH), None)


PIPELINES = [f"{s}-{m}-w{w}" for s in ("pp_gpipe", "pp_1f1b") for m in ("llama", "qwen3") for w in (2, 4)]


@pytest.mark.parametrize("name", PIPELINES)
def test_a_pipeline_sends_microbatch_by_seq_by_hidden_both_ways(name):
    """Batch 8 in 4 microbatches of 2 rows, 24 tokens: Llama's hidden 248 gives 2 x 24 x 248 = 11,904 elements,
    Qwen3's 160 gives 7,680. Every stage but the last sends that forward once per microbatch, every stage but the
    first sends it back as a gradient; each send meets a receive of the same size on the peer."""
    run = _run(name)
    assert run["ranks_agree"]
    hidden = {"llama": 248, "qwen3": 160}[run["model"]]
    w, mb = run["world_size"], run["layout"]["microbatches"]
    acts = [c for c in run["collectives"] if c["dtype"] == "float32" and c["op"] in ("gloo:send", "gloo:recv")]
    assert {c["numel_in"] for c in acts} == {2 * 24 * hidden}
    # each of the w - 1 boundaries: mb forward and mb backward sends, each received once, over two steps
    assert len(acts) == 2 * 2 * mb * (w - 1) * 2
    for strategy in ("pp", None):
        first = _first(_explain(run, 2 * 24 * hidden, "gloo:send", strategy=strategy, pipeline=(w, mb)))
        assert first.kind == "pp_activation" and "2×24×" in first.description and first.tier == 0


def test_the_shape_exchange_is_set_up_and_its_bytes_are_the_pickled_metadata():
    """Recorded before the first step (torch 2.13): the warm-up vote (int32, 1), send_object_list's size (int64, 1)
    and payload (uint8, 166 bytes forward, 167 back for Llama). A byte tensor between stages is the pickled metadata
    whatever its length; read as float32 the same count is no pipeline tensor."""
    run = _run("pp_gpipe-llama-w2")
    setup = sorted({(c["dtype"], c["numel_in"]) for c in run["collectives"] if c["dtype"] != "float32"})
    assert setup == [("int32", 1), ("int64", 1), ("uint8", 166), ("uint8", 167)]
    for strategy in ("pp", None):
        first = _first(_explain(run, 1, "gloo:recv", strategy=strategy, pipeline=(2, 4)))
        assert first.kind == "pp_metadata" and "warm-up vote" in first.description
        first = _first(_explain(run, 166, "gloo:send", "uint8", strategy, (2, 4)))
        assert first.kind == "pp_metadata" and "166 bytes" in first.description
    first = _first(_explain(run, 166, "gloo:send", "float32", "pp", (2, 4)))
    assert first is None or first.kind != "pp_metadata"


def test_without_microbatches_every_split_of_the_batch_is_a_weaker_candidate():
    run = _run("pp_1f1b-llama-w2")
    e = _explain(run, 4 * 24 * 248, "gloo:send", strategy="pp")
    first = _first(e)
    assert first.kind == "pp_activation" and first.tier == 1 and "cut into 2 microbatches" in first.description
    # a P2P op carries no gradient bucket: the whole-batch count is an activation, never a bucket
    assert all(c.kind in ("pp_activation", "pp_metadata", "activation") for c in e.matches)


@pytest.mark.parametrize(("batch", "parts"), [(8, 4), (10, 4), (7, 3), (5, 5), (3, 1), (16, 6)])
def test_microbatches_are_what_tensor_split_gives(batch, parts):
    import torch

    rows = {len(t) for t in torch.tensor_split(torch.zeros(batch), parts)}
    assert set(microbatch_rows(batch, parts)) == rows


def test_a_combined_strategy_allows_each_part_and_nothing_else():
    assert known_strategy("tp+fsdp2") and known_strategy("pp") and not known_strategy("tp+fsdp3")
    assert strategy_allows("tp_activation", "tp+fsdp2") and strategy_allows("fsdp2_unit", "tp+fsdp2")
    assert not strategy_allows("ddp_bucket", "tp+fsdp2") and not strategy_allows("fsdp_unit", "tp+fsdp2")
    assert strategy_allows("zero_bucket", "pp+zero1") and not strategy_allows("zero_bucket", "pp+ddp")


def test_the_cli_takes_stages_microbatches_and_a_combined_strategy(tmp_path):
    run = _run("pp_gpipe-llama-w4")
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(run["config"]))
    r = runner.invoke(app, ["explain", "--config", str(cfg), "--batch", "8", "--seq", "24", "--stages", "4",
                            "--microbatches", "4", "--strategy", "pp", "--op", "nccl:send", "--numel", "11904",
                            "--json"])
    assert r.exit_code == 0, r.output
    first = json.loads(r.stdout)["explanations"][0]["candidates"][0]
    assert first["kind"] == "pp_activation" and first["exact"] and "between 4 stages" in first["description"]
    r = runner.invoke(app, ["explain", "--config", str(cfg), "--strategy", "tp+fsdp3", "--numel", "11904"])
    assert r.exit_code == 2 and "unknown strategy 'tp+fsdp3'" in r.stderr


@pytest.mark.parametrize("name", ["tp_fsdp2-llama-w4", "tp_fsdp2-qwen3-w4"])
def test_tp_then_fully_shard_gathers_each_tp_shard_sharded_again_over_dp(name):
    """A 2 x 2 mesh (dp, tp). Llama's layer, by hand: q [272, 248] column-wise -> [136, 248] -> 68 x 248 = 16,864 on
    dp; k and v [136, 248] -> 34 x 248 = 8,432 each; o [248, 272] row-wise -> [248, 136] -> 124 x 136 = 16,864; gate
    and up [690, 248] -> [345, 248] -> 173 x 248 = 42,904 each; down [248, 690] -> [248, 345] -> 124 x 345 = 42,780;
    two norms 124 each: 179,428 per rank, 358,856 gathered. The root (embedding and head [32003, 248], not split by
    TP, and the norm): 16,002 x 248 x 2 + 124 = 7,937,116."""
    run = _run(name)
    assert run["ranks_agree"]
    units = {c["numel_in"] for c in run["collectives"] if c["op"] == "gloo:all_gather"}
    if run["model"] == "llama":
        assert units == {179428, 7937116}
    for strategy in ("tp+fsdp2", None):
        for n in units:
            e = _explain(run, n, "gloo:all_gather", strategy=strategy, numel_out=2 * n, tp=2)
            first = _first(e)
            assert first.kind == "fsdp2_unit", (n, first)
            # the root holds nothing TP splits: FSDP2's own rule gives it, the 2-D one only the blocks
            assert ("over TP (tp=2)" in first.description) == (first.params[0] != "model.embed_tokens.weight")
    # without --tp the same count is no FSDP2 unit of the whole parameters
    block = min(units)
    e = _explain(run, block, "gloo:all_gather", strategy="fsdp2", numel_out=2 * block)
    assert not [c for c in e.matches if c.kind == "fsdp2_unit" and c.verdict == MATCH and c.tier == 0]


ZERO = [f"zero{k}-{m}-w2" for k in (1, 2, 3) for m in ("llama", "qwen3")]


@pytest.mark.parametrize("name", ZERO)
def test_deepspeed_broadcasts_each_parameter_as_bytes_at_initialize(name):
    """engine._broadcast_model: one broadcast per parameter, viewed as uint8 (Llama's embedding, 32,003 x 248 float32
    = 31,746,976 bytes); stage 3's partitioning sends them again."""
    run = _run(name)
    assert run["ranks_agree"]
    sent = [c["numel_in"] for c in run["collectives"] if c["dtype"] == "uint8"]
    assert len(sent) == len(run["params"]) * (2 if name.startswith("zero3") else 1)
    for strategy in (name.split("-")[0], None):
        for n in set(sent):
            first = _first(_explain(run, n, "gloo:broadcast", "uint8", strategy))
            assert first.kind == "zero_broadcast" and "× 4 bytes" in first.description, (n, first)


@pytest.mark.parametrize("name", [z for z in ZERO if not z.startswith("zero3")])
def test_zero_1_and_2_all_reduce_one_bucket_and_gather_the_partition(name):
    """Default reduce_bucket_size (5e8) holds every gradient of these models: one all_reduce of all of them (stage 2
    too: use_multi_rank_bucket_allreduce); after the step each rank's half of the flat buffer, padded to 2 x world,
    is all-gathered (Llama: 17,304,696 elements, 8,652,348 per rank)."""
    run = _run(name)
    total = sum(math.prod(s) for _, s, _ in run["params"])
    ops = {(c["op"], c["numel_in"], c["numel_out"]) for c in run["collectives"] if c["numel_in"] > 1}
    part = -(-total // 4) * 2
    assert ("gloo:all_reduce", total, total) in ops and ("gloo:all_gather", part, 2 * part) in ops
    first = _first(_explain(run, total, "gloo:all_reduce", strategy=name.split("-")[0]))
    assert first.kind == "zero_bucket"
    first = _first(_explain(run, part, "gloo:all_gather", strategy=name.split("-")[0], numel_out=2 * part))
    assert first.kind == "zero_partition"


def test_zero_3_gathers_persistent_parameters_alone_and_prefetches_the_rest_in_one():
    """Llama at world 2, recorded: the first step gathers module by module; once the trace is complete the 13
    parameters of at most 1e5 elements (q, k, v, o at 67,456 and less, the norms) are persistent and gathered alone
    after each step, and the second step's first fetch gathers every other parameter at once: the embedding, the
    head and the six MLP weights, 2 x 3,968,372 + 6 x 85,436 = 8,449,360 per rank. The trace check broadcasts one
    int64 per parameter use: 2 x 21 = 42."""
    run = _run("zero3-llama-w2")
    ops = [(c["op"], c["numel_in"]) for c in run["collectives"]]
    assert ("gloo:all_gather", 8449360) in ops and ops.count(("gloo:broadcast", 42)) == 2
    first = _first(_explain(run, 8449360, "gloo:all_gather", strategy="zero3", numel_out=2 * 8449360))
    assert first.kind == "zero3_gather" and "prefetch" in first.description and len(first.params) == 8
    first = _first(_explain(run, 124, "gloo:all_gather", strategy="zero3", numel_out=248))
    assert first.kind == "zero3_gather"
    first = _first(_explain(run, 42, "gloo:broadcast", strategy="zero3"))
    assert first.kind == "zero_metadata" and "21 parameters" in first.description
    # Qwen3 ties its embedding and head: one parameter, used by two modules, 2 x (24 + 1) = 50 uses
    qwen = _run("zero3-qwen3-w2")
    assert ("gloo:broadcast", 50) in [(c["op"], c["numel_in"]) for c in qwen["collectives"]]
    first = _first(_explain(qwen, 50, "gloo:broadcast", strategy="zero3"))
    assert first.kind == "zero_metadata" and "1 more" in first.description
    # the submodule order: 63 fetches for Llama (30 modules hold parameters, their ancestors and the root included),
    # 71 for Qwen3 (33: four q/k norms more, and its head holds the embedding's tied weight, listed once): a count
    # the trace's forward and backward give, answered as a weaker candidate within what they can give
    for r, n, m in ((run, 63, 30), (qwen, 71, 33)):
        first = _first(_explain(r, n, "gloo:broadcast", strategy="zero3"))
        assert (first.kind, first.tier) == ("zero_metadata", 1) and f"{m} modules hold parameters" in first.description
        assert _first(_explain(r, 3 * m + 1, "gloo:broadcast", strategy="zero3")) is None
        assert not [c for c in _explain(r, n, "gloo:broadcast", strategy="ddp").matches if c.kind == "zero_metadata"]


def test_zero_buckets_close_before_a_gradient_would_overflow_the_job_s_reduce_bucket_size():
    """Stage 2 with reduce_bucket_size 300,000 and contiguous_gradients off, Llama at world 2, the buckets as DeepSpeed
    flushed them, in gradient-ready order: the head alone (7,936,744: it opens an empty bucket, the next gradient
    would overflow it), the final norm and layer 1's down (171,120), up (170,872), gate + post-norm + o + v
    (272,304), k + q + input norm + layer 0's down (272,304), ..., k + q + input norm (101,432), the embedding.
    explain told the job's reduce_bucket_size forms the same buckets."""
    run = _run("zero2_small-llama-w2")
    sizes = {n: math.prod(s) for n, s, _ in run["params"]}
    calls = run["layout"]["bucket_calls"]
    got = [sum(sizes[n] for n in call) for call in calls[: len(calls) // 2]]
    assert got == [7936744, 171120, 170872, 272304, 272304, 170872, 272304, 101432, 7936744]
    table = bench_explain.table_for(run, "transformers")
    m = merge(model_from_dict(run["config"], run["model"]), world_size=2)
    for n in set(got):
        first = _first(explain(n, m, None, "gloo:all_reduce", "float32", "zero2", table, reduce_bucket_size=300_000))
        assert first.kind == "zero_bucket" and "reduce_bucket_size 300000" in first.description, n
