"""Where explain's parameter table comes from: a config built by transformers, a checkpoint, the user's module, or
the built-in layouts when transformers is missing; and what the user is told about each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from needs import torch_and_transformers
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.explain import frommodel

DATA = Path(__file__).parent / "data" / "explain"
TRUTH = DATA / "truth"

torch_and_transformers()


def _config(tmp_path: Path, run: str) -> Path:
    cfg = json.loads((TRUTH / f"{run}.json").read_text())["config"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return path


def _json(args: list[str]) -> tuple[dict, str]:
    r = CliRunner().invoke(app, ["explain", *args, "--json"])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def test_a_gpt2_config_is_built_by_transformers_and_its_model_broadcast_found(tmp_path):
    """GPT-2 spells its sizes n_embd / n_layer / n_head / n_inner; the whole-model broadcast is 696,086 elements."""
    cfg = _config(tmp_path, "ddp-gpt2-w2")
    j, err = _json(["--config", str(cfg), "--numel", "696086", "--op", "BROADCAST", "--world-size", "2"])
    assert err == ""
    assert j["schema_version"] == 6 and j["model"]["hidden"] == 128 and j["model"]["layers"] == 2
    assert j["table"]["origin"] == "transformers" and j["table"]["numel"] == 696086
    first = j["explanations"][0]["candidates"][0]
    assert first["kind"] == "model" and first["exact"] and "initial sync of module states" in first["description"]
    assert j["explanations"][0]["table_source"] == "transformers 5.23.0, GPT2LMHeadModel built on the meta device"


def test_without_transformers_one_line_says_so_and_the_built_in_layouts_answer(tmp_path, monkeypatch):
    monkeypatch.setattr(frommodel, "available", lambda pkg: pkg != "transformers")
    cfg = _config(tmp_path, "ddp-llama-w2")
    r = CliRunner().invoke(app, ["explain", "--config", str(cfg), "--numel", "17304696", "--op", "ALLREDUCE"])
    assert r.exit_code == 0
    assert r.stderr.count("\n") == 1 and "transformers is not installed" in r.stderr
    assert "pip install 'ncclcheck[hf]'" in r.stderr
    assert "parameter table: the built-in layouts" in r.stdout
    assert "ddp_bucket: match" in r.stdout


def test_a_family_the_built_in_layouts_do_not_describe_says_the_model_could_not_be_built(tmp_path, monkeypatch):
    """GPT-2 without transformers: stdout says first that the model could not be built and what builds it, never
    "no exact match" followed by a request for the --config that was given (issue 43)."""
    monkeypatch.setattr(frommodel, "available", lambda pkg: pkg != "transformers")
    cfg = _config(tmp_path, "ddp-gpt2-w2")
    j, err = _json(["--config", str(cfg), "--numel", "696086", "--op", "BROADCAST"])
    e = j["explanations"][0]
    assert not [c for c in e["candidates"] if c["exact"]]
    assert j["model"]["unbuilt"] == "transformers is not installed; pip install 'ncclcheck[hf]' builds it"
    assert "no parameter table: the model could not be built, and the built-in layouts describe Llama-style " \
           "families, not gpt2" in e["facts"]
    r = CliRunner().invoke(app, ["explain", "--config", str(cfg), "--numel", "696086", "--op", "BROADCAST"],
                           env={"COLUMNS": "200"})
    lines = r.stdout.splitlines()
    assert lines[1] == ("No exact match, and no tensor of the model was tested: it could not be built (transformers "
                        "is not installed; pip install 'ncclcheck[hf]' builds it).")
    assert "--config" not in r.stdout and "probability" not in r.stdout


def test_no_match_in_a_known_model_says_no_tensor_of_it_has_the_count(tmp_path):
    """A count the model's table cannot form: said as such, before the factor line."""
    cfg = _config(tmp_path, "ddp-llama-w2")
    r = CliRunner().invoke(app, ["explain", "--config", str(cfg), "--numel", "17304697", "--op", "ALLREDUCE"],
                           env={"COLUMNS": "200"})
    lines = r.stdout.splitlines()
    assert lines[1] == "No exact match: no tensor of this model has this count."
    assert lines.index(next(line for line in lines if line.startswith("factors: "))) > 1
    assert "probability about 0 " not in r.stdout and "probability about 0\n" not in r.stdout


def test_custom_code_is_refused_unless_asked_for(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "tiny_custom", "architectures": ["TinyForCausalLM"],
                               "auto_map": {"AutoModelForCausalLM": "modeling_tiny.TinyForCausalLM"}}))
    r = CliRunner().invoke(app, ["explain", "--config", str(cfg), "--numel", "1000"])
    assert r.exit_code == 2
    assert "its model class is custom code (auto_map)" in r.stderr and "--trust-remote-code" in r.stderr
    assert r.stdout == ""


def test_bucket_cap_mb_gives_the_buckets_of_the_run_that_set_it(tmp_path):
    """ddp_cap1-llama-w2 recorded buckets of 7,936,744 (lm_head), 341,992, 272,304, 341,744 and 8,139,608."""
    cfg = _config(tmp_path, "ddp_cap1-llama-w2")
    for n in (341992, 272304, 341744, 8139608):
        j, _ = _json(["--config", str(cfg), "--numel", str(n), "--op", "ALLREDUCE", "--bucket-cap-mb", "1",
                      "--strategy", "ddp"])
        first = j["explanations"][0]["candidates"][0]
        assert first["exact"] and first["kind"] == "ddp_bucket", n
        assert "bucket_cap_mb=1 for every bucket" in first["description"]
    j, _ = _json(["--config", str(cfg), "--numel", "341992", "--op", "ALLREDUCE", "--strategy", "ddp"])
    assert not [c for c in j["explanations"][0]["candidates"] if c["exact"] and c["kind"] == "ddp_bucket"]


NO_INPUT = ("not observed: taken as the reverse of registration order (model.parameters()), the order DDP's reducer "
            "assumes when it forms its buckets at construction; no pass ran: no example input is known for this "
            "module (it has no config)")


def test_the_users_own_module_is_read_on_the_meta_device(monkeypatch):
    """TinyNet: embedding 1000 x 64, three blocks of 50,243 parameters (LayerNorm 128, qkv 12,480, proj 4,160,
    fc1 16,835, fc2 16,640), head 650: 215,379 in all."""
    monkeypatch.chdir(DATA / "module")
    j, err = _json(["--module", "tinynet:build", "--numel", "215379", "--op", "ALLREDUCE", "--world-size", "2"])
    assert j["table"] == {"origin": "module", "source": "tinynet:build (TinyNet) built on the meta device",
                          "notes": ["gradient-ready order " + NO_INPUT + ": DDP's rebuilt buckets and ZeRO's gradient "
                                    "buckets rest on it (they follow the first backward's order, which only a pass "
                                    "shows)",
                                    "hidden size H = 64: the width of the input embedding embed.weight"],
                          "ready_order": {"observed": False, "how": NO_INPUT},
                          "parameters": 33, "numel": 215379, "buffers": 0}
    assert j["explanations"][0]["ready_order"] == {"observed": False, "how": NO_INPUT}
    assert j["explanations"][0]["candidates"][0]["kind"] == "ddp_bucket"
    j, _ = _json(["--module", "tinynet:build", "--numel", "25122", "--numel-out", "50244", "--op", "_ALLGATHER_BASE"])
    first = j["explanations"][0]["candidates"][0]
    assert first["kind"] == "fsdp_unit" and "block blocks.0" in first["description"]


@pytest.mark.parametrize(("spec", "message"), [
    ("tinynet", "--module tinynet: expected pkg.module:factory"),
    ("nosuchmodule:build", "--module nosuchmodule:build: No module named 'nosuchmodule'"),
    ("tinynet:not_a_module", "--module tinynet:not_a_module: the factory returned str, not a torch module"),
])
def test_a_bad_module_is_one_clear_error(monkeypatch, spec, message):
    monkeypatch.chdir(DATA / "module")
    r = CliRunner().invoke(app, ["explain", "--module", spec, "--numel", "1000"])
    assert r.exit_code == 2 and message in r.stderr and r.stdout == ""


def test_custom_code_beside_the_config_runs_when_asked_for(tmp_path):
    """TinyForCausalLM (remote_code/): embedding and head 500 x 48, two layers of Linear 48 x 48 and LayerNorm:
    24,000 + 2 x (2,304 + 48 + 96) + 24,000 = 52,896. Offline, in a process of its own (transformers copies the code
    into HF_HOME's module cache)."""
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf")}
    r = subprocess.run([sys.executable, "-m", "ncclcheck", "explain", "--config", str(DATA / "remote_code"),
                        "--numel", "52896", "--op", "ALLREDUCE", "--trust-remote-code", "--json"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and r.stderr == ""
    j = json.loads(r.stdout)
    assert j["table"]["source"] == "transformers 5.23.0, TinyForCausalLM built on the meta device"
    first = j["explanations"][0]["candidates"][0]
    assert first["kind"] == "ddp_bucket" and len(first["params"]) == 10


def test_analyze_log_names_the_hung_collectives_tensor_from_the_same_table(tmp_path):
    """A watchdog line whose NumelIn is the Llama run's whole model (17,304,696: DDP's first-iteration bucket)."""
    cfg = _config(tmp_path, "ddp-llama-w2")
    log = tmp_path / "rank0.log"
    log.write_text("[rank0]:[E1122 00:31:17.418552033 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective "
                   "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=17304696, NumelOut=17304696, "
                   "Timeout(ms)=600000) ran for 600031 milliseconds before timing out.\n")
    r = CliRunner().invoke(app, ["analyze-log", str(log), "--config", str(cfg), "--json"])
    assert r.exit_code == 1 and r.stderr == ""
    findings = {f["code"]: f for f in json.loads(r.stdout)["verdict"]["findings"]}
    tensor = findings["tensor"]
    assert tensor["message"].startswith("ALLREDUCE #9 (NumelIn 17,304,696) is ddp_bucket: DDP bucket of the first "
                                        "iteration: all 21 gradients in one bucket")
    assert "(table: transformers 5.23.0, LlamaForCausalLM built on the meta device" in tensor["message"]
    assert tensor["evidence"] == [f"{log}:1"]
    assert "What tensor it is" not in findings["size-not-the-cause"]["fix"]
    r = CliRunner().invoke(app, ["analyze-log", str(log), "--json"])
    codes = [f["code"] for f in json.loads(r.stdout)["verdict"]["findings"]]
    assert "tensor" not in codes


@pytest.mark.parametrize(("op", "numel", "numel_out", "what"), [
    ("_ALLGATHER_BASE", 1024, 2048, "sequence-parallel activation B×S/tp×H = 2×16/2×64, gathered"),
    ("_REDUCE_SCATTER_BASE", 2048, 1024, "sequence-parallel activation B×S×H = 2×16×64, reduce-scattered over 2"),
])
def test_sequence_parallel_on_a_module_takes_h_from_its_embedding(monkeypatch, op, numel, numel_out, what):
    """A module has no config: H is its input embedding's width (TinyNet's 1000 × 64), so B×S/tp×H forms as it does
    with a config (issue 43)."""
    monkeypatch.chdir(DATA / "module")
    j, err = _json(["--module", "tinynet:build", "--numel", str(numel), "--numel-out", str(numel_out), "--op", op,
                    "--batch", "2", "--seq", "16", "--tp", "2", "--world-size", "2", "--strategy", "tp"])
    assert j["model"]["hidden"] == 64
    first = j["explanations"][0]["candidates"][0]
    assert (first["kind"], first["exact"], first["description"]) == ("tp_activation", True, what)
