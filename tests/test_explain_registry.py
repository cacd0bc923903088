"""Every config transformers reads, explain reads (issue 43, section 1): configs as ``save_pretrained`` writes them
(its ``{"__float__": "Infinity"}``), per-stage list values (Swin's ``depths`` and ``num_heads``), and transformers'
own error, in one line, where it cannot build the model.

The property over the whole registry of the installed transformers runs in ``tools/explain_registry.py`` (804
model types); here a model type of each of its shapes (``explain_registry.SAMPLE``: the class that builds the config,
and whether it holds towers, experts, an encoder and a decoder), most under a second each, and small configs of the
shapes whose defaults are slow to build (Swin's per-stage lists, Mamba-2's special floats)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from needs import torch_and_transformers
from typer.testing import CliRunner

from ncclcheck.cli import app

torch_and_transformers()

sys.path.insert(0, str(Path(__file__).parent.parent / "tools"))
import explain_registry  # noqa: E402

runner = CliRunner()

SAMPLE = [t for types in explain_registry.SAMPLE.values() for t in types]
# What transformers itself cannot build in the sample, and its own words (see docs/explain.md).
REFUSED = {"nougat": "the config class has no default config: ValueError: Unrecognized model type for subconfig: "
                     "donut_swin."}


@pytest.mark.parametrize("model_type", SAMPLE)
def test_a_registry_default_config_builds_under_every_strategy(model_type):
    assert model_type in explain_registry.model_types()
    outcome, why = explain_registry.check(model_type)
    if model_type in REFUSED:
        assert outcome == "refused" and why.startswith(REFUSED[model_type]) and "\n" not in why
    else:
        assert outcome == "built", why


def test_the_sample_holds_every_shape_of_the_registry():
    """Each shape the installed transformers' registry has (the class that builds the config; towers, experts, an
    encoder and a decoder) has its model type in the sample, and each sample type is of the shape it stands for."""
    shapes = {explain_registry.shape(t) for t in explain_registry.model_types()}
    assert shapes == set(explain_registry.SAMPLE)
    for k, types in explain_registry.SAMPLE.items():
        assert {explain_registry.shape(t) for t in types} == {k}


def test_save_pretrained_special_floats_are_read_as_transformers_reads_them(tmp_path):
    """Mamba-2's time_step_limit (0, inf) is saved as {"__float__": "Infinity"}; explain builds the model."""
    from transformers import Mamba2Config

    Mamba2Config(num_hidden_layers=2, hidden_size=32, expand=2, num_heads=8, head_dim=8, n_groups=1, state_size=8,
                 vocab_size=64, architectures=["Mamba2ForCausalLM"]).save_pretrained(tmp_path)
    assert '"__float__": "Infinity"' in (tmp_path / "config.json").read_text()
    r = runner.invoke(app, ["explain", "--config", str(tmp_path), "--numel", "64", "--no-cache", "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["table"]["origin"] == "transformers"


def test_per_stage_lists_are_no_shape_error(tmp_path):
    """Swin's depths and num_heads are per stage: explain asks transformers instead of refusing them."""
    cfg = {"model_type": "swin", "architectures": ["SwinForImageClassification"], "image_size": 32, "patch_size": 4,
           "embed_dim": 16, "depths": [1, 2], "num_heads": [2, 4], "window_size": 4, "num_labels": 3}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = runner.invoke(app, ["explain", "--config", str(tmp_path), "--numel", "64", "--no-cache", "--json"])
    assert r.exit_code == 0, r.stderr
    table = json.loads(r.stdout)["table"]
    assert table["origin"] == "transformers" and "SwinForImageClassification" in table["source"]


def test_what_transformers_cannot_build_is_its_own_error_in_one_line(tmp_path):
    """An inconsistent Mamba-2 config (hidden_size × expand ≠ num_heads × head_dim): transformers' validation error,
    several lines long, quoted on one line; the built-in layouts answer (exit 0)."""
    cfg = {"model_type": "mamba2", "architectures": ["Mamba2ForCausalLM"], "hidden_size": 64, "expand": 2,
           "num_heads": 8, "head_dim": 8, "num_hidden_layers": 2, "vocab_size": 64}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = runner.invoke(app, ["explain", "--config", str(tmp_path), "--numel", "64", "--no-cache"])
    assert r.exit_code == 0
    lines = r.stderr.splitlines()
    assert len(lines) == 1
    assert "could not build this model" in lines[0]
    assert "must equal num_heads * head_dim" in lines[0]


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="prlimit (util-linux) is not installed")
def test_a_process_that_dies_fails_its_model_types_one_by_one():
    """Under a limit too small for Python to start, the chunk's process dies without a result: each of its model
    types is run again alone, dies alone and is listed as failed with the process's end, never as built."""
    got = explain_registry.isolated(["llama", "bert"], as_limit=20_000_000, timeout=60)
    assert set(got) == {"llama", "bert"}
    for outcome, why in got.values():
        assert outcome == "failed" and why.startswith("the process ended with exit ") and "no result" in why


@pytest.mark.parametrize(("config", "built"), [
    # mapped to MusicgenForCausalLM, made for the decoder's own config: 'MusicgenConfig' object has no attribute
    # 'dropout'; the class made for the config itself builds it, as transformers' text-to-waveform auto class does
    ("MusicgenConfig", "MusicgenForConditionalGeneration"),
    # ReformerModelWithLMHead asserts is_decoder, which a default Reformer config is not; AutoModel builds it
    ("ReformerConfig", "ReformerModel"),
])
def test_an_auto_class_that_cannot_build_the_config_is_passed_over(tmp_path, config, built):
    import transformers

    getattr(transformers, config)().save_pretrained(tmp_path)
    r = runner.invoke(app, ["explain", "--config", str(tmp_path), "--numel", "64", "--no-cache", "--json"])
    assert r.exit_code == 0, r.stderr
    assert f"{built} built on the meta device" in json.loads(r.stdout)["table"]["source"]


@pytest.mark.skipif(__import__("importlib").util.find_spec("timm") is not None, reason="timm is installed here")
def test_a_model_whose_class_needs_a_missing_package_is_refused_not_built_from_a_part():
    """OmDet-Turbo's model needs timm; its folder's other class with the same config is its decoder. Without timm
    explain quotes transformers' refusal instead of answering with the decoder's table (the full walk found it)."""
    outcome, why = explain_registry.check("omdet-turbo")
    assert (outcome, "timm" in why) == (explain_registry.REFUSED, True), why
