"""explain: exact arithmetic on known cases, op-aware layouts, coincidence, hostile inputs, narrow output, CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.explain.core import COINCIDENCE, MATCH, explain, size_table
from ncclcheck.explain.counts import ExplainError, factorize, parse_count
from ncclcheck.explain.models import PRESETS, Model, merge, model_from_config, model_from_dict
from ncclcheck.explain.params import parameters

QWEN = merge(PRESETS["qwen2.5-7b"], batch=8, seq=2048, world_size=8)
runner = CliRunner()


@pytest.mark.parametrize(("text", "n"), [("467019003", 467019003), ("467,019,003", 467019003), ("4.67e8", 467000000),
                                         ("5e8", 500000000), ("1_000", 1000), ("9223372036854775807", 2**63 - 1),
                                         ("9.223372036854775807e18", 2**63 - 1), ("0.5e1", 5)])
def test_parse_count(text, n):
    assert parse_count(text) == n


@pytest.mark.parametrize(("text", "message"), [
    ("-5", "must be positive"), ("0", "must be positive"), ("abc", "not a number"), ("1.5", "not a whole number"),
    ("4.675e-1", "not a whole number"), ("", "not a number"), (".", "not a number"), ("1e", "not a number"),
    ("18446744073709551557", "more elements than any tensor can have"), ("9223372036854775808", "more elements"),
    ("1e400", "more elements than any tensor can have"), ("1" * 1000, "too long"), ("1e99999999999", "more elements"),
])
def test_parse_count_rejects(text, message):
    with pytest.raises(ExplainError, match=message):
        parse_count(text)


@given(st.integers(1, 2**63 - 1))
def test_parse_count_reads_every_spelling(n):
    assert parse_count(f"{n:,}") == parse_count(f"{n:_}") == parse_count(f" +{n} ") == n


@given(st.integers(2**63, 10**40))
def test_parse_count_refuses_every_count_above_int64(n):
    with pytest.raises(ExplainError, match="more elements than any tensor can have|too long"):
        parse_count(str(n))


@given(st.integers(1, 2**63 - 1))
def test_factorisation_multiplies_back(n):
    f = factorize(n)
    assert math.prod(f) == n and f == sorted(f)


def test_factorisation_of_large_semiprimes_and_primes():
    """Counts trial division cannot finish: a product of two 31-bit primes and the largest int64 prime."""
    assert factorize(2147483647 * 2147483659) == [2147483647, 2147483659]
    assert factorize(9223372036854775783) == [9223372036854775783]
    assert factorize(2**62) == [2] * 62


def test_the_famous_wrong_claim():
    """467,019,003 is odd: no exact match; B×S×H×world is 469,762,048, only a near miss."""
    e = explain(467019003, QWEN, op="ALLREDUCE")
    assert list(e.factors) == [3, 11, 14152091]
    assert e.matches == ()
    assert e.facts[1].startswith("odd: it has no factor 2")
    near = {c.description: c.delta for c in e.candidates}
    assert near["hidden states of all 8 ranks B×S×H×W = 8×2048×3584×8 (an all_gather's output, reduced again)"] \
        == 469762048 - 467019003
    assert any("consistent with a DeepSpeed gradient bucket" in a for a in e.advice)


def test_hidden_states_tuple_advice():
    e = explain(29 * 8 * 2048 * 3584, QWEN, op="ALLREDUCE")
    assert any("output_hidden_states tuple" in c.description for c in e.matches)
    assert any("output_hidden_states=False" in a for a in e.advice)


def test_qwen_bucket_is_two_layers_and_a_norm():
    """The public report's NumelIn=466,119,168 is DeepSpeed's bucket: final norm + decoder layers 27 and 26."""
    e = explain(466119168, QWEN, op="ALLREDUCE")
    first = e.matches[0]
    assert (first.kind, first.tier, first.verdict) == ("zero_bucket", 0, MATCH)
    assert "bucket 2 of 16" in first.description
    assert "2 whole decoder layers (26, 27) + model.norm.weight" in first.description
    layer = sum(p.numel for p in parameters(QWEN) if p.name.startswith("model.layers.0."))
    assert layer == 233057792
    # Shifted runs of the same sum exist; with a rule-formed bucket explaining the count they are coincidences.
    runs = [c for c in e.matches if c.kind == "gradient_run"]
    assert runs and all(c.verdict == COINCIDENCE for c in runs)


def test_all_gather_never_claims_gradient_buckets():
    """An FSDP2 all-gather of a small model once came back as 'two gradient buckets': an all-gather carries none."""
    m = merge(PRESETS["llama-3-8b"], layers=2, world_size=4)
    params = parameters(m)
    layer = [p for p in params if p.name.startswith("model.layers.0.")]
    shard = sum(-(-p.shape[0] // 4) * math.prod(p.shape[1:]) for p in layer)
    e = explain(shard, m, shard * 4, "_ALLGATHER_BASE")
    assert e.matches[0].kinds[:2] == ("fsdp2_unit", "fsdp_unit")
    assert all(k not in ("gradient_run", "ddp_bucket", "zero_bucket", "layer") for c in e.matches for k in c.kinds)
    assert "NumelOut = 4 × NumelIn: an all-gather over 4 ranks, NumelIn is one rank's shard" in e.facts
    # The same count as an all_reduce is a gradient (a run, a bucket), never an FSDP unit.
    ar = explain(shard * 4, m, op="ALLREDUCE")
    assert all(k not in ("fsdp_unit", "fsdp2_unit") for c in ar.matches for k in c.kinds)


def test_reduce_scatter_of_the_embedding_gradient():
    e = explain(544997376, QWEN, numel_out=68124672, op="_REDUCE_SCATTER_BASE")
    assert e.world == 8
    assert "NumelIn = 8 × NumelOut: a reduce-scatter over 8 ranks, NumelIn is the whole (padded) tensor" in e.facts
    assert {k for c in e.matches for k in c.kinds} <= {"fsdp_unit", "fsdp2_unit", "zero3_bucket", "gradient_run",
                                                       "tp_activation", "activation"}
    assert [c.params for c in e.matches] == [("lm_head.weight",), ("model.embed_tokens.weight",)]
    assert e.ruled_out == ("ddp_bucket, model, parameter, zero_bucket would have this NumelIn, but not as a "
                           "reduce_scatter: a reduce-scatter moves gradient shards (FSDP, ZeRO-3); DDP and ZeRO-1/2 "
                           "buckets are all-reduced and parameters are gathered",)


def test_world_from_the_op_beats_the_flag():
    e = explain(100, Model(world_size=8), 400, "_ALLGATHER_BASE")
    assert e.world == 4 and any("not the --world-size 8 given" in f for f in e.facts)


def test_strategy_restricts_layouts():
    layer = 233057792
    both = explain(layer // 8, QWEN, layer, "_ALLGATHER_BASE")
    assert set(both.matches[0].kinds) >= {"fsdp_unit", "fsdp2_unit"}
    zero3 = explain(layer // 8, QWEN, layer, "_ALLGATHER_BASE", strategy="zero3")
    assert all(c.kind in ("zero3_gather", "gather_run", "scalar", "activation", "parameter") for c in zero3.matches)
    assert "fsdp2_unit, fsdp_unit would have this NumelIn, but belong to another strategy than --strategy zero3" \
        in zero3.ruled_out


def test_small_run_is_flagged_as_coincidence():
    """Two adjacent small gradients sum to a count that thousands of runs of norms and biases reach by chance."""
    params = parameters(QWEN)
    norms = [p for p in params if p.name.startswith("model.layers.3.") and p.name.endswith("layernorm.weight")]
    assert [p.name for p in norms] == ["model.layers.3.input_layernorm.weight",
                                       "model.layers.3.post_attention_layernorm.weight"]
    n = sum(p.numel for p in norms)
    e = explain(n, QWEN, op="ALLREDUCE")
    runs = [c for c in e.matches if c.kind == "gradient_run"]
    assert runs and all(c.verdict == COINCIDENCE for c in runs)
    assert e.chance >= 1e-3 and e.searched > 10000


def test_barrier():
    e = explain(1, QWEN, op="ALLREDUCE")
    assert e.matches[0].kind == "scalar" and "barrier" in e.matches[0].description


def test_solve_missing_dimension():
    m = Model(seq=2048, hidden=3584)
    assert explain(16 * 2048 * 3584, m).matches[0].description == "B×S×H with batch = 16 (the other two as given)"
    assert not explain(16 * 2048 * 3584 + 2048, m).matches


@given(st.integers(1, 64), st.integers(1, 8192), st.integers(1, 16384), st.integers(2, 16))
def test_any_product_is_an_exact_match(b, s, h, w):
    """Whatever the dims, B×S×H is found exactly; gathered, its shard is NumelIn and the product NumelOut."""
    m = Model(batch=b, seq=s, hidden=h, world_size=w)
    assert any(c.kind == "activation" for c in explain(b * s * h, m, op="ALLREDUCE").matches)
    gathered = explain(b * s * h, m, b * s * h * w, "_ALLGATHER_BASE")
    assert any(c.kind == "activation" and c.numel_out == b * s * h * w for c in gathered.matches)


def test_presets_total_the_published_sizes():
    """Totals of the public configs: 7.62B, 8.29B (with the vision tower), 46.7B, 30.5B, 671B."""
    total = {k: sum(p.numel for p in parameters(m)) for k, m in PRESETS.items()}
    assert total["qwen2.5-7b"] == 7615616512
    assert total["qwen2.5-vl-7b"] == 8292166656
    assert total["mixtral-8x7b"] == 46702792704
    assert total["qwen3-30b-a3b"] == 30532122624
    assert total["deepseek-v3"] == 671026404352
    assert total["llama-3-8b"] == 8030261248


def test_vl_config_reads_text_and_vision(tmp_path):
    """A VL config keeps the language model under text_config and the tower under vision_config."""
    cfg = {"model_type": "qwen2_5_vl",
           "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16,
                             "out_hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2,
                             "temporal_patch_size": 2, "in_chans": 3},
           "text_config": {"model_type": "qwen2_5_vl_text", "hidden_size": 3584, "num_hidden_layers": 28,
                           "vocab_size": 152064, "num_attention_heads": 28, "num_key_value_heads": 4,
                           "intermediate_size": 18944, "tie_word_embeddings": False}}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    m = model_from_config(str(tmp_path))
    assert (m.hidden, m.layers, m.kv_dim, m.qkv_bias) == (3584, 28, 512, True)
    assert sum(x.numel for x in parameters(m)) == 8292166656


def test_classification_head_with_bias_makes_odd_counts():
    m = merge(PRESETS["qwen2.5-7b"], num_labels=3, head_bias=True)
    names = [p.name for p in parameters(m)]
    assert names[-2:] == ["score.weight", "score.bias"] and "lm_head.weight" not in names
    e = explain(3 * 3584 + 3, m, op="ALLREDUCE")  # odd: only a run holding the 3-element bias reaches it
    assert [(c.params, c.verdict) for c in e.matches] == [(("score.bias", "score.weight"), COINCIDENCE)]
    assert [(c.params, c.delta) for c in e.candidates if not c.exact] == [(("score.weight",), -3)]


def test_cli_json():
    r = runner.invoke(app, ["explain", "--model", "qwen2.5-7b", "--batch", "8", "--seq", "2048", "--world-size", "8",
                            "--numel", "466,119,168", "--op", "ALLREDUCE", "--json"], catch_exceptions=False)
    assert (r.exit_code, r.stderr) == (0, "")
    j = json.loads(r.stdout)
    assert j["schema_version"] == 6
    e = j["explanations"][0]
    assert (e["numel"], e["factorization"]) == (466119168, [2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 303463])
    first = e["candidates"][0]
    assert (first["kind"], first["exact"], first["verdict"], first["tier"]) == ("zero_bucket", True, "match", 0)
    assert e["op_family"] == "all_reduce" and e["searched"] > 0 and 0 <= e["coincidence_chance"] <= 1


def test_cli_log_takes_counts_from_watchdog_lines():
    from conftest import REAL
    example = str(REAL.parents[2] / "examples" / "incident-8rank" / "rank0.log")
    r = runner.invoke(app, ["explain", "--log", example, "--json"], catch_exceptions=False)
    e = json.loads(r.stdout)["explanations"]
    assert [(x["op"], x["numel"]) for x in e] == [("ALLREDUCE", 467019003)]


@pytest.mark.parametrize(("args", "message"), [
    (["--numel", "-3"], "an element count must be positive"),
    (["--numel", "lots"], "is not a number of elements"),
    (["--numel", "18446744073709551557"], "more elements than any tensor can have"),
    (["--numel", "1e400"], "more elements than any tensor can have"),
    (["--numel", "5", "--numel-out", "1e400"], "--numel-out: '1e400': more elements"),
    (["--numel-out", "5"], "--numel-out needs --numel"),
    (["--model", "gpt-9"], "unknown model 'gpt-9'"),
    (["--numel", "5", "--strategy", "zero9"], "unknown strategy 'zero9'"),
    (["--model", "qwen2.5-7b", "--config", "c.json"], "give --model, or --config / --checkpoint / --module, not both"),
    ([], "nothing to show"),
    (["--json"], "nothing to show"),
    (["--log", "/nonexistent"], "/nonexistent: no such file or directory"),
])
def test_cli_bad_input(args, message):
    r = runner.invoke(app, ["explain", *args])
    assert r.exit_code == 2
    assert message in r.stderr and r.stderr.count("\n") == 1
    assert r.stdout == ""


def test_cli_malformed_config(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("{not json")
    r = runner.invoke(app, ["explain", "--config", str(p), "--numel", "5"])
    assert r.exit_code == 2
    assert r.stderr.startswith(f"ncclcheck: error: {p}: not valid JSON")
    assert r.stderr.count("\n") == 1


@pytest.mark.parametrize(("path", "message"), [("/dev/zero", "larger than 4 MiB"), ("/nonexistent/config.json",
                                                                                    "No such file")])
def test_cli_config_is_read_bounded(path, message):
    r = runner.invoke(app, ["explain", "--config", path, "--numel", "5"])
    assert r.exit_code == 2 and message in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.parametrize("columns", ["60", "80", "200"])
def test_cli_size_table_keeps_every_digit(columns):
    r = runner.invoke(app, ["explain", "--model", "qwen2.5-7b", "--batch", "8", "--seq", "2048"],
                      env={"COLUMNS": columns})
    assert r.exit_code == 0
    out = r.stdout
    assert "…" not in out
    for number in ("58,720,256", "234.88 MB", "7,615,616,512", "2,491,416,576", "1,702,887,424",
                   "26,306,674,688", "233,057,792"):
        assert number in out, number
    assert "each of 8 ranks contributes this tensor, 8× it is gathered, assumed: give --world-size" in \
        " ".join(out.split())
    assert all(len(line) <= int(columns) for line in out.splitlines())


def test_size_table_one_all_gather_definition():
    """The all_gather time is the same tensor gathered over the same W with or without --world-size 8."""
    base = merge(PRESETS["qwen2.5-7b"], batch=8, seq=2048)
    w8, with_world = size_table(merge(base, world_size=8))
    w_default, without = size_table(base)
    assert w8 == w_default == 8
    assert [r.allgather for r in with_world] == [r.allgather for r in without]
    assert not any("gathered" in r.description for r in with_world)


@pytest.mark.parametrize("columns", ["60", "80"])
def test_cli_explanation_keeps_every_digit(columns):
    r = runner.invoke(app, ["explain", "--model", "qwen2.5-7b", "--world-size", "8", "--op", "ALLREDUCE",
                            "--numel", "466119168"], env={"COLUMNS": columns})
    assert r.exit_code == 0 and "…" not in r.stdout
    assert "466,119,168" in r.stdout and "3 × 303,463" in r.stdout
    assert all(len(line) <= int(columns) for line in r.stdout.splitlines())


def test_cli_log_skips_counts_no_tensor_can_have(tmp_path):
    line = ("[rank0]:[E1122 00:31:17.418552033 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=2841, OpType=ALLREDUCE, NumelIn={n}, NumelOut={n}, "
            "Timeout(ms)=600000) ran for 600031 milliseconds before timing out.\n")
    p = tmp_path / "rank0.log"
    p.write_text(line.format(n=18446744073709551557) + line.format(n=466119168).replace("2841", "2842"))
    r = runner.invoke(app, ["explain", "--log", str(p), "--json"], catch_exceptions=False)
    assert r.exit_code == 0
    assert [x["numel"] for x in json.loads(r.stdout)["explanations"]] == [466119168]
    assert "NumelIn=18446744073709551557 is more than any tensor can have" in r.stderr


OPS = [None, "ALLREDUCE", "_ALLGATHER_BASE", "_REDUCE_SCATTER_BASE", "BROADCAST", "nccl:scatter", "ALLTOALL", "SEND",
       "REDUCE", "COALESCED"]


@settings(deadline=None)  # a property of the answer, not of speed (conftest sets no deadline anywhere too)
@given(st.integers(1, 2**63 - 1), st.sampled_from(OPS), st.one_of(st.none(), st.integers(0, 2**40)),
       st.sampled_from(list(PRESETS)), st.one_of(st.none(), st.integers(1, 64)),
       st.one_of(st.none(), st.integers(1, 16)), st.sampled_from([None, "ddp", "zero3", "fsdp2", "tp"]))
def test_exact_means_exact(n, op, out, preset, world, batch, strategy):
    """Whatever the count, op and model: every match predicts exactly NumelIn (and NumelOut where given)."""
    m = merge(PRESETS[preset], world_size=world, batch=batch, seq=batch and 128, layers=2)
    e = explain(n, m, out, op, strategy=strategy)
    for c in e.matches:
        assert c.numel == n
        if out and c.numel_out is not None:
            assert c.numel_out == out
    assert 0 <= e.chance <= 1 and e.searched >= 0


@pytest.mark.parametrize(("key", "value", "message"), [
    ("vocab_size", 10**30, "vocab_size = 1000000000000000000000000000000 is larger than any model's dimension"),
    ("hidden_size", 1e30, "hidden_size must be a positive integer, not 1e+30"),
])
def test_cli_an_absurd_config_value_is_refused_whatever_its_type(tmp_path, key, value, message):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, key: value}))
    r = runner.invoke(app, ["explain", "--config", str(p), "--numel", "5"])
    assert r.exit_code == 2 and message in r.stderr and r.stderr.count("\n") == 1


def test_cli_log_uses_the_group_size_the_log_prints():
    """The demo's all_reduce runs over the 8-rank world group: explain --log times it for 8 ranks (9.08 ms on
    NVLink), as analyze-log's size finding does, not for the unknown group's upper bound."""
    example = str(Path(__file__).parent.parent / "examples" / "incident-8rank" / "rank0.log")
    e = json.loads(runner.invoke(app, ["explain", "--log", example, "--json"]).stdout)["explanations"][0]
    assert e["world_size"] == 8
    assert round(e["transfer_seconds"]["NVLink 4 (H100/H200, ring)"] * 1e3, 2) == 9.08


@pytest.mark.parametrize("columns", ["60", "80", "120"])
def test_cli_no_line_ends_in_spaces(columns):
    r = runner.invoke(app, ["explain", "--model", "qwen2.5-7b", "--numel", "466119168", "--op", "ALLREDUCE"],
                      env={"COLUMNS": columns})
    assert r.exit_code == 0 and r.stdout.count("\n") > 20
    assert [line for line in r.stdout.splitlines() if line != line.rstrip()] == []


@pytest.mark.parametrize(("cfg", "dtype"), [
    ({"torch_dtype": "bfloat16"}, "bfloat16"),
    ({"dtype": "float16"}, "float16"),  # transformers >= 4.56 writes dtype
    ({"torch_dtype": "auto"}, None),
    ({"text_config": {"torch_dtype": "bfloat16"}}, "bfloat16"),
    ({}, None),
])
def test_the_configs_dtype_is_read(cfg, dtype):
    assert model_from_dict({"model_type": "llama", **cfg}, "config.json").dtype == dtype


def _llama_config(tmp_path: Path, **extra: object) -> str:
    p = tmp_path / f"config{len(list(tmp_path.iterdir()))}.json"
    p.write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
                             "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                             "num_key_value_heads": 2, "vocab_size": 100, **extra}))
    return str(p)


def test_cli_the_configs_dtype_sets_bytes_and_times_unless_dtype_is_given(tmp_path):
    """A bfloat16 model moves 2 bytes an element: the same times as --dtype bfloat16, and the answer says why."""
    args = ["explain", "--numel", "1000000", "--op", "ALLREDUCE", "--world-size", "8", "--json"]
    cfg = _llama_config(tmp_path, torch_dtype="bfloat16")
    from_config = json.loads(runner.invoke(app, [*args, "--config", cfg]).stdout)["explanations"][0]
    given_bf16 = json.loads(runner.invoke(app, [*args, "--config", cfg, "--dtype", "bfloat16"]).stdout)
    given_fp32 = json.loads(runner.invoke(app, [*args, "--config", cfg, "--dtype", "float32"]).stdout)
    assert from_config["dtype_assumed"] == "bfloat16" and from_config["dtype_source"] == "config"
    assert from_config["transfer_seconds"] == given_bf16["explanations"][0]["transfer_seconds"]
    assert given_bf16["explanations"][0]["dtype_source"] == "--dtype"
    assert given_fp32["explanations"][0]["dtype_assumed"] == "float32"
    assert from_config["transfer_seconds"] != given_fp32["explanations"][0]["transfer_seconds"]
    plain = json.loads(runner.invoke(app, [*args, "--config", _llama_config(tmp_path)]).stdout)["explanations"][0]
    assert plain["dtype_assumed"] == "float32" and plain["dtype_source"] == "default"
    text = " ".join(runner.invoke(app, [*args[:-1], "--config", cfg]).stdout.split())
    assert "one ALLREDUCE of it over 8 ranks (bfloat16 from the config's torch_dtype): " in text


def test_cli_each_logged_collective_is_timed_over_its_own_groups_size():
    """rank0's tensor-parallel group has 2 ranks and rank2's default group 4: the same count in each is explained
    and timed over its own group, whatever --world-size says, and stderr says so once."""
    logs = Path(__file__).parent / "data" / "explain" / "groups"
    r = runner.invoke(app, ["explain", "--log", str(logs / "rank0.log"), "--log", str(logs / "rank2.log"),
                            "--world-size", "4", "--json"])
    assert r.exit_code == 0
    got = [(e["numel"], e["world_size"]) for e in json.loads(r.stdout)["explanations"]]
    assert got == [(1000000, 2), (1000000, 4)]
    times = [e["transfer_seconds"]["NVLink 4 (H100/H200, ring)"] for e in json.loads(r.stdout)["explanations"]]
    assert times[0] < times[1]  # a ring all_reduce moves 2(W-1)/W of the tensor: 1.0 for 2 ranks, 1.5 for 4
    assert r.stderr == ("ncclcheck: the logs say a group of 2 ranks ran some of these collectives: they are explained "
                        "and timed over 2, not --world-size 4\n")


ROOT = Path(__file__).parent.parent


def _first_hour_commands() -> list[list[str]]:
    """The README's explain example and the next step `make demo` prints, as written (issue 43, section 4)."""
    import re
    import shlex

    readme = next(line for line in (ROOT / "README.md").read_text().splitlines()
                  if line.startswith("ncclcheck explain --numel 467019003"))
    demo = re.search(r"^DEMO_NEXT := (ncclcheck .*)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert demo is not None
    return [shlex.split(readme)[1:], shlex.split(demo.group(1))[1:]]


@pytest.mark.parametrize("with_transformers", [True, False])
def test_the_readme_example_and_the_demos_next_step_run_as_written(monkeypatch, with_transformers):
    """From a fresh clone's root: the config they name is shipped (Qwen2-7B's, hidden 3584), and the answer says
    what the count is not; without transformers the built-in layouts answer and say what would build the model."""
    from ncclcheck.explain import frommodel

    if with_transformers and not (frommodel.available("transformers") and frommodel.available("torch")):
        pytest.skip("transformers and torch are not installed (make test installs both)")
    if not with_transformers:
        monkeypatch.setattr(frommodel, "available", lambda pkg: pkg != "transformers")
    monkeypatch.chdir(ROOT)
    for args in _first_hour_commands():
        r = runner.invoke(app, args, env={"COLUMNS": "200"})
        assert r.exit_code == 0, r.stderr
        lines = r.stdout.splitlines()
        assert lines[:2] == ["NumelIn = 467,019,003", "No exact match: no tensor of this model has this count."]
        table = next(line for line in lines if line.startswith("parameter table: "))
        if with_transformers:
            assert table == "parameter table: transformers 5.23.0, Qwen2ForCausalLM built on the meta device"
        else:
            assert table == ("parameter table: the built-in layouts (the config's own model could not be built: "
                             "transformers is not installed; pip install 'ncclcheck[hf]' builds it)")
        j = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
        assert (j["model"]["hidden"], j["model"]["layers"], j["model"]["vocab"]) == (3584, 28, 152064)


@pytest.mark.parametrize(("key", "value"), [("head_dim", 0), ("num_heads", [3, 6, 12, 24]),
                                            ("hidden_size", {"__float__": "Infinity"})])
def test_what_transformers_reads_is_no_shape_error_of_ours(key, value):
    """A zero (unset: GLM-5 Next's head_dim 0 builds), a value per stage (Swin) or transformers' own JSON object is
    unknown to the shape facts, never an error before transformers is asked (issue 43)."""
    m = model_from_dict({"model_type": "x", "num_hidden_layers": 2, key: value}, "config.json")
    assert m.layers == 2 and getattr(m, {"head_dim": "head_dim", "num_heads": "heads", "hidden_size": "hidden"}[key]) is None
