"""The user's FSDP wrap policy as they wrote it (``--wrap-policy``), and analyze-log --config taking the same training
options as explain (--mesh, --find-unused-parameters, --block-class, --wrap-policy, --frozen, --adapter), each checked
on a recorded run (tests/data/explain/truth, gloo on CPU)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.explain.adapt import as_trained, parse_wrap_policy
from ncclcheck.explain.counts import ExplainError
from ncclcheck.explain.frommodel import installed

sys.path.insert(0, str(Path(__file__).parent.parent / "tools"))
import bench_explain  # noqa: E402

DATA = Path(__file__).parent / "data" / "explain"
TRUTH = DATA / "truth"


@pytest.mark.parametrize(("text", "classes"), [
    ("transformer_auto_wrap_policy(transformer_layer_cls={LlamaDecoderLayer})", ("LlamaDecoderLayer",)),
    ("functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer, MistralDecoderLayer},)",
     ("LlamaDecoderLayer", "MistralDecoderLayer")),
    ("partial(transformer_auto_wrap_policy, transformer_layer_cls=set([transformers.models.llama.modeling_llama."
     "LlamaDecoderLayer]))", ("LlamaDecoderLayer",)),
    ("auto_wrap_policy=ModuleWrapPolicy({Bottleneck}), device_id=0", ("Bottleneck",)),
    ("ModuleWrapPolicy(module_classes=[Bottleneck, Stem])", ("Bottleneck", "Stem")),
    ("fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer", ("LlamaDecoderLayer",)),
    ("  fsdp_transformer_layer_cls_to_wrap: [Qwen2DecoderLayer, Qwen2VLVisionBlock]",
     ("Qwen2DecoderLayer", "Qwen2VLVisionBlock")),
    ('"transformer_layer_cls_to_wrap": ["T5Block"],', ("T5Block",)),
    ("FSDP_TRANSFORMER_CLS_TO_WRAP=GPT2Block,CLIPEncoderLayer", ("GPT2Block", "CLIPEncoderLayer")),
    ("LlamaDecoderLayer, LlamaDecoderLayer", ("LlamaDecoderLayer",)),
    ("{BertLayer}", ("BertLayer",)),
    ("fsdp_transformer_layer_cls_to_wrap: 'T5Block'", ("T5Block",)),
    ("--fsdp_transformer_layer_cls_to_wrap LlamaDecoderLayer", ("LlamaDecoderLayer",)),
    ("--fsdp_transformer_layer_cls_to_wrap=GPT2Block", ("GPT2Block",)),
    ('{"transformer_layer_cls_to_wrap": ["Qwen3DecoderLayer"], "version": 2}', ("Qwen3DecoderLayer",)),
    ("TRANSFORMER_BASED_WRAP", ()),  # Accelerate's default classes: the model's _no_split_modules, the table's own
])
def test_a_wrap_policy_is_read_as_written(text, classes):
    assert parse_wrap_policy(text) == classes


@pytest.mark.parametrize(("text", "message"), [
    ("size_based_auto_wrap_policy", "a size-based policy wraps by parameter count, which explain does not model"),
    ("functools.partial(size_based_auto_wrap_policy, min_num_params=100000000)", "a size-based policy"),
    ("NO_WRAP", "NO_WRAP makes the whole model one unit"),
    ("always_wrap_policy", "always_wrap_policy wraps every module"),
    ("transformer_auto_wrap_policy(transformer_layer_cls={type(model.layers[0])})", "cannot read class names"),
    ("{}", "cannot read class names from '{}'"),
    ("fsdp_transformer_layer_cls_to_wrap: Llama-Layer", "cannot read class names"),
])
def test_a_policy_explain_cannot_read_is_one_clear_error(text, message):
    with pytest.raises(ExplainError, match=message.replace("(", r"\(").replace("{", r"\{").replace("}", r"\}")):
        parse_wrap_policy(text)


ACCELERATE_YAML = """compute_environment: LOCAL_MACHINE
distributed_type: FSDP
fsdp_config:
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_backward_prefetch: BACKWARD_PRE
  fsdp_sharding_strategy: FULL_SHARD
  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer
  fsdp_version: 2
num_processes: 8
"""


@pytest.mark.parametrize(("body", "classes"), [
    (ACCELERATE_YAML, ("LlamaDecoderLayer",)),
    (ACCELERATE_YAML.replace("LlamaDecoderLayer", "\n    - LlamaDecoderLayer\n    - LlamaRMSNorm"),
     ("LlamaDecoderLayer", "LlamaRMSNorm")),
    (ACCELERATE_YAML.replace("LlamaDecoderLayer", "LlamaDecoderLayer,LlamaRMSNorm"), ("LlamaDecoderLayer", "LlamaRMSNorm")),
    (ACCELERATE_YAML.replace("  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer\n", ""), ()),
    (json.dumps({"fsdp_config": {"transformer_layer_cls_to_wrap": ["Gemma3DecoderLayer", "SiglipEncoderLayer"],
                                 "version": 2}}, indent=2), ("Gemma3DecoderLayer", "SiglipEncoderLayer")),
    ('{"fsdp_transformer_layer_cls_to_wrap": "BertLayer", "backward_prefetch": "backward_pre"}', ("BertLayer",)),
    ("from functools import partial\n\npolicy = partial(\n    transformer_auto_wrap_policy,\n"
     "    transformer_layer_cls={GPT2Block},\n)\nmodel = FSDP(model, auto_wrap_policy=policy)\n", ("GPT2Block",)),
])
def test_a_launchers_config_file_is_read_for_the_classes(tmp_path, body, classes):
    path = tmp_path / "policy"
    path.write_text(body)
    assert parse_wrap_policy(str(path)) == classes


def test_a_config_file_with_another_policy_or_none_is_one_clear_error(tmp_path):
    path = tmp_path / "accelerate.yaml"
    path.write_text(ACCELERATE_YAML.replace("TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP"))
    with pytest.raises(ExplainError, match="a size-based policy wraps by parameter count"):
        parse_wrap_policy(str(path))
    path.write_text("distributed_type: MULTI_GPU\n")
    with pytest.raises(ExplainError, match=f"{path}: names no class to wrap"):
        parse_wrap_policy(str(path))


needs_hf = pytest.mark.skipif(installed("transformers") is None or installed("torch") is None,
                              reason="transformers and torch are not installed (make test installs both)")
if (installed("transformers") is None or installed("torch") is None) and (
        os.environ.get("NCCLCHECK_CI") or os.environ.get("NCCLCHECK_REQUIRE_TORCH")):
    raise RuntimeError("transformers and torch are not installed (make test installs both)")

FSDP_RUNS = sorted(p.stem for p in TRUTH.glob("*.json") if p.stem.startswith(("fsdp1-", "fsdp2-", "hsdp-"))
                   and p.stem.endswith(("-w2", "hsdp-convnet-w4", "hsdp-llama-w4")))


def _raw(run: dict):
    """The run's model as built (by its factory, or by transformers from its config), once a session."""
    return bench_explain.raw_table(run, "transformers")


@needs_hf
@pytest.mark.parametrize("name", FSDP_RUNS)
def test_the_policy_naming_the_recorded_classes_forms_the_recorded_units(name):
    """Each recorded FSDP run wrapped the modules of some classes (ModuleWrapPolicy, or fully_shard on each, which
    torch's transformer_auto_wrap_policy forms alike: both are _module_wrap_policy in torch/distributed/fsdp/wrap.py).
    That policy, written as the user writes it, gives exactly the blocks the run recorded and the same table."""
    run = json.loads((TRUTH / f"{name}.json").read_text())
    raw = _raw(run)
    kinds = dict(raw.classes)
    recorded = [b.removeprefix("base_model.model.") for b in run["layout"]["blocks"]]
    classes = sorted({kinds[b] for b in recorded})
    policy = f"functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={{{', '.join(classes)}}})"
    table = as_trained(raw, wrap_policy=policy)
    assert list(table.blocks) == recorded
    if run.get("adapter") or run.get("freeze"):
        return  # the rest of the run's setup is the truth test's (bench_explain.customised)
    assert table == bench_explain.table_for(run, "transformers")


def _watchdog(tmp_path: Path, op: str, numel_in: int, numel_out: int, world: int) -> Path:
    """One rank's log: the group's size as torch states it at init, then the watchdog's timeout of the collective."""
    log = tmp_path / "rank0.log"
    log.write_text(f"[rank0]:[I1122 00:21:17.000000000 ProcessGroupNCCL.cpp:1000] [PG ID 0 PG GUID 0 Rank 0] "
                   f"ProcessGroupNCCL initialization options: size: {world}, global rank: 0, TIMEOUT(ms): 600000\n"
                   "[rank0]:[E1122 00:31:17.418552033 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective "
                   f"operation timeout: WorkNCCL(SeqNum=9, OpType={op}, NumelIn={numel_in}, NumelOut={numel_out}, "
                   "Timeout(ms)=600000) ran for 600031 milliseconds before timing out.\n")
    return log


def _tensor(args: list[str]) -> str:
    r = CliRunner().invoke(app, ["analyze-log", *args, "--json"])
    assert r.exit_code == 1, r.stderr
    findings = {f["code"]: f for f in json.loads(r.stdout)["verdict"]["findings"]}
    return findings["tensor"]["message"]


def _config(tmp_path: Path, run: str) -> str:
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(json.loads((TRUTH / f"{run}.json").read_text())["config"]))
    return str(folder / "config.json")


@needs_hf
@pytest.mark.parametrize(("run", "op", "numel_in", "numel_out", "options", "with_them", "without"), [
    # HSDP 2 x 2: one decoder layer's gradient shard, all-reduced over its group of 2 replicas
    ("hsdp-llama-w4", "ALLREDUCE", 357988, 357988, ["--mesh", "2x2"],
     "ALLREDUCE #9 (NumelIn 357,988) is fsdp2_unit: HSDP (fully_shard on a 2-D mesh) gradient shard of block "
     "model.layers.0", "is no tensor of the model"),
    # find_unused_parameters=True: buckets formed at construction in registration order, never rebuilt
    ("ddp_unused-llama-w2", "ALLREDUCE", 9367952, 9367952, ["--find-unused-parameters"],
     "ALLREDUCE #9 (NumelIn 9,367,952) is ddp_bucket: DDP bucket 1 of 2 with find_unused_parameters=True",
     "is ddp_bucket: DDP bucket 2 of 2 (rebuilt"),
    # the first two layers' and the embedding's weights frozen: DDP's first bucket holds the 7 others
    ("ddp-frozen-w2", "ALLREDUCE", 951280, 951280,
     ["--frozen", "model.embed_tokens.*", "--frozen", "model.layers.0.*", "--frozen", "model.layers.1.self_attn.*"],
     "ALLREDUCE #9 (NumelIn 951,280) is ddp_bucket: DDP bucket of the first iteration: all 7 gradients in one bucket",
     "is gradient_run"),
])
def test_analyze_log_takes_explains_training_options(tmp_path, run, op, numel_in, numel_out, options, with_them,
                                                     without):
    cfg = _config(tmp_path, run)
    recorded = json.loads((TRUTH / f"{run}.json").read_text())
    world = recorded["layout"]["mesh"][0] if options[0] == "--mesh" else recorded["world_size"]  # the replica group
    log = str(_watchdog(tmp_path, op, numel_in, numel_out, world))
    assert _tensor([log, "--config", cfg, *options]).startswith(with_them)
    assert without in _tensor([log, "--config", cfg])


@needs_hf
def test_analyze_log_takes_the_lora_adapter_given_or_beside_the_config(tmp_path):
    """A LoRA run's FSDP2 root unit (embedding, final norm and head, all frozen but gathered): 704,440 per rank."""
    spec = json.loads((TRUTH / "fsdp2-lora-w2.json").read_text())["adapter"]
    cfg = _config(tmp_path, "fsdp2-lora-w2")
    adapter = tmp_path / "elsewhere" / "adapter_config.json"
    adapter.parent.mkdir()
    adapter.write_text(json.dumps(spec))
    log = str(_watchdog(tmp_path, "_ALLGATHER_BASE", 704440, 1408880, 2))
    given = _tensor([log, "--config", cfg, "--adapter", str(adapter)])
    assert given.startswith("_ALLGATHER_BASE #9 (NumelIn 704,440) is fsdp2_unit: FSDP2 fully_shard unit the root unit")
    assert "base_model.model." in given and "with a LoRA adapter" in given
    (Path(cfg).parent / "adapter_config.json").write_text(json.dumps(spec))
    assert _tensor([log, "--config", cfg]) == given


@needs_hf
def test_wrap_policy_and_block_class_are_one_option_in_both_commands(tmp_path, monkeypatch):
    """ConvNet's Bottlenecks as FSDP units (fsdp1-convnet-w2): stage1.0's 2,245 parameters padded to 2,246, 1,123 per
    rank; the policy as written, the launcher's key and --block-class give the same answer, byte for byte."""
    monkeypatch.chdir(DATA / "module")
    yaml = tmp_path / "accelerate.yaml"
    yaml.write_text(ACCELERATE_YAML.replace("LlamaDecoderLayer", "Bottleneck"))
    ways = (["--block-class", "Bottleneck"], ["--wrap-policy", "ModuleWrapPolicy({Bottleneck})"],
            ["--wrap-policy", str(yaml)], ["--wrap-policy", "fsdp_transformer_layer_cls_to_wrap: Bottleneck"])
    count = ["--numel", "1123", "--numel-out", "2246", "--op", "_ALLGATHER_BASE", "--json"]
    outs = [CliRunner().invoke(app, ["explain", "--module", "convnet:build", *w, *count]) for w in ways]
    assert all(r.exit_code == 0 for r in outs) and len({r.stdout for r in outs}) == 1
    first = json.loads(outs[0].stdout)["explanations"][0]["candidates"][0]
    assert first["kind"] == "fsdp_unit" and "block stage1.0" in first["description"]
    log = str(_watchdog(tmp_path, "_ALLGATHER_BASE", 1123, 2246, 2))
    said = {_tensor([log, "--module", "convnet:build", *w]) for w in ways}
    assert len(said) == 1 and "is fsdp_unit: FSDP1 FlatParameter of block stage1.0" in said.pop()


@needs_hf
@pytest.mark.parametrize("args", [["explain", "--numel", "9"], ["analyze-log", "LOG"]])
def test_a_wrap_policy_naming_no_class_of_the_model_is_one_clear_error(tmp_path, monkeypatch, args):
    monkeypatch.chdir(DATA / "module")
    log = str(_watchdog(tmp_path, "ALLREDUCE", 9, 9, 2))
    argv = [log if a == "LOG" else a for a in args]
    r = CliRunner().invoke(app, [*argv, "--module", "convnet:build", "--wrap-policy",
                                 "transformer_auto_wrap_policy(transformer_layer_cls={LlamaDecoderLayer})"])
    assert r.exit_code == 2 and "--block-class LlamaDecoderLayer: no module of that class" in r.stderr
    r = CliRunner().invoke(app, [*argv, "--module", "convnet:build", "--wrap-policy", "size_based_auto_wrap_policy"])
    assert r.exit_code == 2 and "a size-based policy wraps by parameter count" in r.stderr


def test_analyze_logs_training_options_need_a_model(tmp_path):
    log = str(_watchdog(tmp_path, "ALLREDUCE", 9, 9, 2))
    r = CliRunner().invoke(app, ["analyze-log", log, "--mesh", "2x2"])
    assert r.exit_code == 2 and "describe the model: give --config, --checkpoint or --module too" in r.stderr


@needs_hf
def test_the_recorded_run_wrapped_by_its_policy_as_written(tmp_path):
    """fsdp1-wrapped-w2: a Llama (hidden 184, MLP 503, vocabulary 5,003, two layers) wrapped by
    functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaMLP}), as recorded. By hand: each MLP
    is gate, up and down, 3 x 503 x 184 = 277,656, gathered as 138,828 per rank; the root unit is the rest, embedding
    and head 2 x 5,003 x 184 = 1,841,104, two layers' attention 2 x (176 + 88 + 88 + 176) x 184 = 194,304, their norms
    4 x 184 and the final norm 184: 2,036,328, 1,018,164 per rank. Without the policy (decoder layers as units) neither
    count is a unit."""
    run = json.loads((TRUTH / "fsdp1-wrapped-w2.json").read_text())
    cfg = _config(tmp_path, "fsdp1-wrapped-w2")
    yaml = tmp_path / "accelerate.yaml"
    yaml.write_text(ACCELERATE_YAML.replace("LlamaDecoderLayer", "LlamaMLP"))
    for n, what in ((138828, "FSDP1 FlatParameter of block model.layers.0.mlp: 277,656 elements padded to a multiple "
                              "of 2, 1/2 per rank"),
                    (1018164, "FSDP1 FlatParameter of the root unit (everything outside the wrapped blocks), 15 "
                              "tensors: model.embed_tokens.weight")):
        assert {(c["op"], c["truth"]["kind"]) for c in run["collectives"] if c["numel_in"] == n} == {
            ("gloo:all_gather", "fsdp_unit")}
        args = ["explain", "--config", cfg, "--numel", str(n), "--numel-out", str(2 * n), "--op", "_ALLGATHER_BASE",
                "--json"]
        outs = [CliRunner().invoke(app, [*args, "--wrap-policy", p]) for p in (run["wrap_policy"], str(yaml))]
        assert outs[0].exit_code == 0 and outs[0].stdout == outs[1].stdout
        first = json.loads(outs[0].stdout)["explanations"][0]["candidates"][0]
        assert first["kind"] == "fsdp_unit" and first["description"].startswith(what)
        plain = json.loads(CliRunner().invoke(app, args).stdout)["explanations"][0]["candidates"]
        assert not any(c["kind"] == "fsdp_unit" and c["exact"] for c in plain)
