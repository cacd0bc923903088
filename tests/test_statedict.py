"""PyTorch's load_state_dict shape checks (evidence/formats/statedict.py): each release's form is a ``state_dict``
clue of its process, quoted as its stated reason with job/statements.toml's `checkpoint_shape`; two flat shapes whose
sizes are k times apart (a shard of ceil(numel / world size)) say the state was saved by a job of another world size.
Written from the formats (tests/data/stated_formats/statedict.log) and recorded on CPU (statedict_recorded.log;
README there)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run, run_text

from ncclcheck.evidence.formats import statedict
from ncclcheck.evidence.types import Loc
from ncclcheck.job.statements import told

HERE = Path(__file__).parent / "data" / "stated_formats"
WRITTEN = (HERE / "statedict.log").read_text().splitlines()


def _read(line: str) -> list[str]:
    return [c.text for c in statedict.Lines().feed(line, Loc("x", 1))]


@pytest.mark.parametrize("line", WRITTEN)
def test_each_release_form_is_a_clue_of_the_checkpoint_mechanism(line):
    (text,) = _read(line)
    assert text.startswith(("size mismatch for ", "While copying")) and told(text).id == "checkpoint_shape"


def test_the_recorded_load_names_the_world_size_ratio():
    """torch 2.13's own error for a 2-rank job's flat shard loaded by an 8-rank job: the checkpoint's 5,613,651
    elements are 4 times the model's 1,403,413 (rounded up by one element), saved by a job of 4 times fewer ranks; the
    steps name the same world size and a resharding state dict."""
    v = run(HERE / "statedict_recorded.log").verdict
    assert v.stated is not None and v.stated.source == "state_dict"
    said = v.stated.meaning
    assert "the checkpoint's 5,613,651 elements are 4 times the model's 1,403,413" in said
    assert "saved by a job of 4 times fewer ranks than this one" in said
    steps = " ".join(v.next_steps)
    assert "FULL_STATE_DICT" in steps and "torch.distributed.checkpoint" in steps and "universal checkpoint" in steps


def test_a_smaller_checkpoint_shard_was_saved_by_more_ranks():
    said = told(_read(WRITTEN[0])[0])
    assert "the model's 9,876,543 elements are 4 times the checkpoint's 2,469,136" in said.means
    assert "4 times more ranks" in said.means


@pytest.mark.parametrize("line", WRITTEN[1:])
def test_shapes_of_more_dimensions_or_no_whole_ratio_say_no_world_size(line):
    """A classification head of 10 classes against 1,000, a convolution's channels, a vocabulary one token larger:
    the model's configuration, not a shard; the meaning says nothing of ranks."""
    said = told(_read(line)[0])
    assert "times fewer ranks" not in said.means and "times more ranks" not in said.means
    assert "differs from this one's" not in said.means


@pytest.mark.parametrize("line", [
    "RuntimeError: The size of tensor a (56124554) must match the size of tensor b (14031139) at non-singleton "
    "dimension 0",
    "ValueError: size mismatch for x: expected 3 got 4",
    "mat1 and mat2 shapes cannot be multiplied (8x4096 and 1024x4096)",
])
def test_a_shape_error_of_no_load_is_not_read(line):
    """An element-wise shape error (the forward pass, an optimizer's step) names no checkpoint: not this source."""
    assert _read(line) == []
    v = run_text(line + "\n").verdict
    assert v.stated is None or v.stated.source != "state_dict"
