"""Building a model for its table takes bounded memory whatever its config says (issue 43, section 1: the registry
run was killed for memory at Inkling, whose shrunk copy held 761 billion elements): the passes that observe the
gradient-ready order run under a ceiling on address space, and an allocation past it fails at once."""

from __future__ import annotations

import os

import pytest

from ncclcheck.explain import memcap
from ncclcheck.explain.frommodel import READY_META, installed

resource = pytest.importorskip("resource")  # the ceiling is a POSIX limit
if memcap._mapped() is None:  # /proc/self/statm is Linux's
    pytest.skip("the address space mapped cannot be read here", allow_module_level=True)

GIB = 1 << 30


def test_an_allocation_past_the_ceiling_fails_at_once_and_the_limit_is_restored():
    torch = pytest.importorskip("torch")
    before = resource.getrlimit(resource.RLIMIT_AS)
    with memcap.capped(256 << 20) as ceiling:
        assert ceiling is not None
        with pytest.raises(RuntimeError) as err:
            torch.empty(GIB, dtype=torch.float32)  # 4 GiB, never written: nothing is resident either way
        assert memcap.out_of_memory(err.value)
        small = torch.zeros(1024)  # what fits still runs
        assert small.sum().item() == 0
    assert resource.getrlimit(resource.RLIMIT_AS) == before
    assert torch.empty(GIB // 4, dtype=torch.uint8).numel() == GIB // 4  # 256 MiB again allowed


def test_the_ceiling_never_raises_a_limit_already_set():
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    mapped = memcap._mapped()
    assert mapped is not None
    resource.setrlimit(resource.RLIMIT_AS, (mapped + 512 * (1 << 20), hard))
    try:
        with memcap.capped(64 * GIB) as ceiling:
            assert ceiling == mapped + 512 * (1 << 20)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.mark.skipif(installed("transformers") is None, reason="transformers is not installed")
def test_a_config_whose_shrunk_copy_is_huge_is_answered_by_the_meta_pass():
    """GPT-2's position table is n_positions × n_embd, and n_positions is no width explain shrinks: 2^25 positions
    make the shrunk copy's table 4 GiB (the model itself, on the meta device, none). The copy fails under the ceiling
    and the meta pass gives the order. The test itself runs under a 3 GiB ceiling: were the copy built, it would fail
    there rather than take the machine's memory."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from ncclcheck.explain.frommodel import _shrunk_order, table_from_config

    cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 32, "n_layer": 2, "n_head": 4,
           "n_positions": 1 << 25, "vocab_size": 64}
    with memcap.capped(3 * GIB):
        table = table_from_config(cfg, os.devnull)
        with torch.device("meta"):
            model = GPT2LMHeadModel(GPT2Config(**cfg))
        with memcap.capped():
            assert _shrunk_order(model) == ((), "a shrunk copy could not be built (it needs more than 2 GiB)")
    assert table.ready_how == READY_META
    assert next(p for p in table.params if p.name == "transformer.wpe.weight").shape == (1 << 25, 32)
