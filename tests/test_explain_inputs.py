"""The gradient-ready order of models that do not take token ids alone: inputs from the model's own signature and
config (images, audio features, decoder ids), and a shrunk copy on the CPU where the meta device cannot run the
forward pass (BART's ``.item()``). Tiny configs of ViT, Whisper, BART and CLIP, built by transformers."""

from __future__ import annotations

import json

import pytest
from needs import torch_and_transformers
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.explain.frommodel import READY_META, READY_SHRUNK

torch_and_transformers()

from ncclcheck.explain import frommodel  # noqa: E402

VIT = {"model_type": "vit", "architectures": ["ViTForImageClassification"], "hidden_size": 32,
       "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37, "image_size": 32, "patch_size": 8,
       "num_channels": 3, "num_labels": 3}
WHISPER = {"model_type": "whisper", "architectures": ["WhisperForConditionalGeneration"], "d_model": 32,
           "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4, "decoder_attention_heads": 4,
           "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "num_mel_bins": 16, "max_source_positions": 30,
           "max_target_positions": 40, "vocab_size": 100, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
           "decoder_start_token_id": 1}
BART = {"model_type": "bart", "architectures": ["BartForSequenceClassification"], "d_model": 32, "encoder_layers": 2,
        "decoder_layers": 2, "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 64,
        "decoder_ffn_dim": 64, "vocab_size": 100, "max_position_embeddings": 64, "num_labels": 3}
CLIP = {"model_type": "clip", "architectures": ["CLIPModel"], "projection_dim": 16,
        "text_config": {"model_type": "clip_text_model", "hidden_size": 32, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "intermediate_size": 37, "vocab_size": 99,
                        "max_position_embeddings": 32, "bos_token_id": 49406, "eos_token_id": 49407},
        "vision_config": {"model_type": "clip_vision_model", "hidden_size": 32, "num_hidden_layers": 2,
                          "num_attention_heads": 4, "intermediate_size": 37, "image_size": 30, "patch_size": 6}}


def _meta_model(cfg: dict):
    import torch  # here, not at the top: collecting this module made every xdist worker import torch (4 s of CPU)
    import transformers

    cls = getattr(transformers, cfg["architectures"][0])
    config = cls.config_class.from_dict(cfg)
    with torch.device("meta"):
        return cls(config)


@pytest.mark.parametrize(("cfg", "shapes"), [
    (VIT, {"pixel_values": (2, 3, 32, 32)}),
    (WHISPER, {"input_features": (2, 16, 60), "decoder_input_ids": (2, 16)}),  # two frames per source position
    (BART, {"input_ids": (2, 16), "decoder_input_ids": (2, 16)}),
    (CLIP, {"input_ids": (2, 16), "pixel_values": (2, 3, 30, 30)}),  # both towers
])
def test_inputs_come_from_the_models_signature_and_config(cfg, shapes):
    inputs = frommodel._inputs(_meta_model(cfg))
    assert {k: tuple(v.shape) for k, v in inputs.items()} == shapes


@pytest.mark.parametrize("cfg", [VIT, WHISPER, BART, CLIP], ids=["vit", "whisper", "bart", "clip"])
def test_every_trainable_parameter_has_its_place_in_the_observed_order(cfg):
    """Whisper's encoder positions are frozen (requires_grad False): they are in no gradient order."""
    model = _meta_model(cfg)
    order, how = frommodel.ready_order(model)
    assert how == READY_SHRUNK
    assert sorted(order) == sorted(n for n, p in model.named_parameters() if p.requires_grad)


@pytest.mark.parametrize("cfg", [VIT, WHISPER, CLIP], ids=["vit", "whisper", "clip"])
def test_the_shrunk_copy_gives_the_order_the_meta_pass_gives(cfg):
    """Only widths shrink: the same modules run in the same order, so the gradients become ready in the same order."""
    model = _meta_model(cfg)
    shrunk, why = frommodel._shrunk_order(model)
    meta, why_meta = frommodel._ready_order(model)
    assert why is None and why_meta is None and shrunk == meta


def test_bart_cannot_run_on_the_meta_device_and_its_shrunk_copy_can():
    """BART's classification head checks its end-of-sequence tokens with .item(), which a meta tensor has no
    value for; the shrunk copy runs on the CPU with real (tiny) tensors."""
    model = _meta_model(BART)
    order, why = frommodel._ready_order(model)
    assert order == () and why == "the forward and backward pass failed (RuntimeError)"
    order, how = frommodel.ready_order(model)
    assert how == READY_SHRUNK and order[0].startswith("classification_head.")


def test_where_the_shrunk_copy_fails_the_meta_pass_answers(monkeypatch):
    monkeypatch.setattr(frommodel, "_shrunk_order", lambda module: ((), "a shrunk copy could not be built"))
    order, how = frommodel.ready_order(_meta_model(VIT))
    assert how == READY_META and len(order) == 40


def test_where_no_pass_runs_the_answer_says_the_order_is_inferred_and_why(monkeypatch):
    monkeypatch.setattr(frommodel, "_shrunk_order", lambda module: ((), "a shrunk copy could not be built"))
    order, how = frommodel.ready_order(_meta_model(BART))
    assert order == ()
    assert how == ("not observed: taken as the reverse of registration order (model.parameters()), the order DDP's "
                   "reducer assumes when it forms its buckets at construction; no pass ran: a shrunk copy could not "
                   "be built; on the meta device, the forward and backward pass failed (RuntimeError)")


def test_the_answer_says_which_order_was_used_in_json_and_text(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(BART))
    r = CliRunner().invoke(app, ["explain", "--config", str(p), "--numel", "99", "--json"])
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["table"]["ready_order"] == {"observed": True, "how": READY_SHRUNK}
    assert j["explanations"][0]["ready_order"] == {"observed": True, "how": READY_SHRUNK}
    r = CliRunner().invoke(app, ["explain", "--config", str(p), "--numel", "99"], env={"COLUMNS": "200"})
    assert f"  - gradient-ready order {READY_SHRUNK}\n" in r.stdout


def test_a_shrunk_config_keeps_its_special_tokens_distinct_and_inside_the_small_vocabulary():
    """Llama 3.1 names three end-of-sequence tokens, all above the shrunk vocabulary of 64."""
    cfg = {"vocab_size": 128256, "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009],
           "pad_token_id": 5, "num_attention_heads": 32, "hidden_size": 4096, "intermediate_size": 14336}
    small = frommodel._shrunk_dict(cfg)
    assert small == {"vocab_size": 64, "bos_token_id": 63, "eos_token_id": [62, 61, 60], "pad_token_id": 5,
                     "num_attention_heads": 4, "hidden_size": 32, "intermediate_size": 32}


def test_a_llama_with_several_end_tokens_runs_shrunk():
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128256,
           "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]}
    model = _meta_model(cfg)
    order, how = frommodel.ready_order(model)
    assert how == READY_SHRUNK and order == frommodel._ready_order(model)[0]


def test_a_model_that_names_several_main_inputs_needs_each_of_them():
    """OneFormer's main_input_name is a list (pixel values and task tokens): an example input is known only where
    every named input is; the order is then inferred, never a TypeError (a list is no dict key)."""
    model = _meta_model(VIT)
    model.main_input_name = ["pixel_values"]
    assert set(frommodel._inputs(model)) == {"pixel_values"}
    model.main_input_name = ["pixel_values", "task_inputs"]
    assert frommodel._inputs(model) is None
    assert frommodel._ready_order(model) == ((), "no example input is known for this module")
