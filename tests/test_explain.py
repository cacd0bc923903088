"""explain: exact arithmetic on known cases, bucket search on a real config, properties, CLI."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.explain.core import (
    PRESETS,
    ExplainError,
    Model,
    explain,
    factorize,
    merge,
    model_from_config,
    parameters,
    parse_count,
)

QWEN = merge(PRESETS["qwen2.5-7b"], batch=8, seq=2048, world_size=8)
runner = CliRunner()


@pytest.mark.parametrize(("text", "n"), [("467019003", 467019003), ("467,019,003", 467019003), ("4.67e8", 467000000),
                                         ("5e8", 500000000), ("1_000", 1000)])
def test_parse_count(text, n):
    assert parse_count(text) == n


@pytest.mark.parametrize("text", ["-5", "0", "abc", "1.5", "4.675e-1", ""])
def test_parse_count_rejects(text):
    with pytest.raises(ExplainError):
        parse_count(text)


def test_the_famous_wrong_claim():
    """467,019,003 is odd: no exact match; the B×S×H×world product is 469,762,048 and only a near miss."""
    e = explain(467019003, QWEN)
    assert list(e.factors) == [3, 11, 14152091]
    assert e.matches == ()
    assert e.facts[1].startswith("odd: it has no factor 2")
    near = {c.description: c.delta for c in e.candidates}
    assert near["one hidden state B×S×H = 8×2048×3584, gathered over 8 ranks"] == 469762048 - 467019003
    assert any("consistent with a DeepSpeed gradient bucket" in a for a in e.advice)


def test_gathered_hidden_state_matches():
    """B×S×H×world is an exact match when the count really is that product."""
    e = explain(8 * 2048 * 3584 * 8, QWEN)
    assert [c.description for c in e.matches if c.kind == "activation"] == [
        "one hidden state B×S×H = 8×2048×3584, gathered over 8 ranks"]


def test_hidden_states_tuple_advice():
    e = explain(29 * 8 * 2048 * 3584, QWEN)
    assert any("output_hidden_states tuple" in c.description for c in e.matches)
    assert any("output_hidden_states=False" in a for a in e.advice)


def test_qwen_bucket_is_two_layers_and_a_norm():
    """The public report's NumelIn=466,119,168 is DeepSpeed's bucket: final norm + decoder layers 27 and 26."""
    e = explain(466119168, QWEN)
    first = e.matches[0]
    assert first.kind == "gradient_bucket"
    assert "2 whole decoder layers (26, 27) + model.norm.weight" in first.description
    assert "exactly the bucket DeepSpeed ZeRO forms" in first.description
    layer = sum(p.numel for p in parameters(QWEN) if p.name.startswith("model.layers.0."))
    assert layer == 233057792


def test_embedding_matches_reduce_scatter_input():
    e = explain(544997376, QWEN, numel_out=68124672, op="_REDUCE_SCATTER_BASE")
    kinds = {(c.kind, c.description) for c in e.matches}
    assert ("parameter", "model.embed_tokens.weight") in kinds
    assert ("relation", "NumelIn = 8 × NumelOut: a reduce_scatter over 8 ranks") in kinds


def test_fsdp_all_gather_relation():
    layer = 233057792
    e = explain(layer // 8, QWEN, numel_out=layer, op="_ALLGATHER_BASE")
    descs = [c.description for c in e.matches]
    assert "NumelOut = 8 × NumelIn: a gather over 8 ranks (all_gather)" in descs
    assert "FSDP shard of one decoder layer, layer/8 (padded up)" in descs


def test_barrier():
    e = explain(1, QWEN)
    assert e.matches[0].kind == "scalar" and "barrier" in e.matches[0].description


def test_solve_missing_dimension():
    m = Model(seq=2048, hidden=3584)
    assert explain(16 * 2048 * 3584, m).matches[0].description == "B×S×H with batch = 16 (the other two as given)"
    assert not explain(16 * 2048 * 3584 + 2048, m).matches


@given(st.integers(1, 64), st.integers(1, 8192), st.integers(1, 16384), st.integers(1, 16))
def test_any_product_is_an_exact_match(b, s, h, w):
    """Whatever the dims, their product (and ×world) is found as an exact match."""
    m = Model(batch=b, seq=s, hidden=h, world_size=w)
    assert any(c.kind == "activation" for c in explain(b * s * h, m).matches)
    if w > 1:
        assert any("gathered" in c.description for c in explain(b * s * h * w, m).matches)


@given(st.integers(1, 10**12))
def test_factorisation_multiplies_back(n):
    f = factorize(n)
    assert math.prod(f) == n and f == sorted(f)


def test_vl_config_text_config(tmp_path):
    """A VL config keeps the language model under text_config; qwen2 models have q/k/v biases."""
    cfg = {"model_type": "qwen2_5_vl", "vision_config": {"hidden_size": 1280},
           "text_config": {"model_type": "qwen2_5_vl", "hidden_size": 3584, "num_hidden_layers": 28,
                           "vocab_size": 152064, "num_attention_heads": 28, "num_key_value_heads": 4,
                           "intermediate_size": 18944, "tie_word_embeddings": False}}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    m = model_from_config(str(p))
    assert (m.hidden, m.layers, m.kv_dim, m.qkv_bias) == (3584, 28, 512, True)
    assert sum(x.numel for x in parameters(m)) == sum(x.numel for x in parameters(PRESETS["qwen2.5-vl-7b"]))


def test_cli_json(tmp_path):
    r = runner.invoke(app, ["explain", "--model", "qwen2.5-7b", "--batch", "8", "--seq", "2048", "--world-size", "8",
                            "--numel", "466,119,168", "--json"], catch_exceptions=False)
    assert (r.exit_code, r.stderr) == (0, "")
    j = json.loads(r.stdout)
    assert j["schema_version"] == 1
    e = j["explanations"][0]
    assert (e["numel"], e["factorization"]) == (466119168, [2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 303463])
    assert e["candidates"][0]["kind"] == "gradient_bucket" and e["candidates"][0]["exact"] is True


def test_cli_log_takes_counts_from_watchdog_lines():
    from conftest import REAL
    example = str(REAL.parents[2] / "examples" / "incident-8rank" / "rank0.log")
    r = runner.invoke(app, ["explain", "--log", example, "--json"], catch_exceptions=False)
    e = json.loads(r.stdout)["explanations"]
    assert [(x["op"], x["numel"]) for x in e] == [("ALLREDUCE", 467019003)]


@pytest.mark.parametrize(("args", "message"), [
    (["--numel", "-3"], "an element count must be positive"),
    (["--numel", "lots"], "is not a number of elements"),
    (["--model", "gpt-9"], "unknown model 'gpt-9'"),
    (["--model", "qwen2.5-7b", "--config", "c.json"], "give --model or --config, not both"),
])
def test_cli_bad_input(args, message):
    r = runner.invoke(app, ["explain", *args])
    assert r.exit_code == 2
    assert message in r.stderr


def test_cli_malformed_config(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("{not json")
    r = runner.invoke(app, ["explain", "--config", str(p), "--numel", "5"])
    assert r.exit_code == 2
    assert r.stderr.startswith(f"ncclcheck: error: {p}: not valid JSON")
    assert r.stderr.count("\n") == 1


def test_cli_size_table():
    r = runner.invoke(app, ["explain", "--batch", "8", "--seq", "2048", "--hidden", "3584"], env={"COLUMNS": "200"})
    assert r.exit_code == 0
    assert "58,720,256" in r.stdout and "234.88 MB" in r.stdout
