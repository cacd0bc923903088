"""The training frameworks' own checks (sweep rH17, docs/data/sweep-rH17-2026-11-29.md): each message of DDP's and
FSDP's construction checks, DDP's gradient buckets, torch.distributed.checkpoint's load planner and DeepSpeed ZeRO,
in every release's form found in the source, is read as its entry of job/statements.toml with that entry's first
step; the ones a CPU can provoke are recorded (tests/data/framework_checks/, gloo under torchrun).

The message forms are written from the sources' format strings (torch/nn/parallel/distributed.py, reducer.cpp,
VariableTypeManual.cpp, fsdp/_init_utils.py, _flat_param.py, _wrap_utils.py, checkpoint/default_planner.py,
DeepSpeed's stage2.py, stage_1_and_2.py and engine.py, 0.3 to the newest), not from any thread's words.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DATA

from ncclcheck.evidence.reader import resolve
from ncclcheck.job.analyze import analyze
from ncclcheck.job.statements import STATEMENTS, told
from ncclcheck.render.json_out import analysis_json

_FIX = {s.id: s.fix[0] for s in STATEMENTS}

# (entry, exception line as the rank prints it after `[rankN]: `), each release's form of each message
_FORMS = [
    ("wrapper_module_devices", "ValueError: DistributedDataParallel's input module must be on the same type of "
                               "devices, but input module parameters locate in {'cpu', 'cuda'}."),
    ("wrapper_module_devices", "ValueError: DistributedDataParallel device_ids and output_device arguments only work "
                               "with single-device/multiple-device GPU modules or CPU modules, but got device_ids [0], "
                               "output_device None, and module parameters {device(type='cpu')}."),
    ("wrapper_module_devices", "ValueError: SyncBatchNorm layers only work with GPU modules"),
    ("wrapper_module_devices", "RuntimeError: FSDP only supports single device modules but got params on "
                               "{device(type='cuda', index=0), device(type='cpu')}"),
    ("wrapper_module_devices", "RuntimeError: FSDP does not support modules with different device types but got "
                               "params on cuda and xpu"),
    ("wrapper_module_devices", "RuntimeError: To support a module with both CPU and GPU params, please pass in "
                               "device_id argument."),
    ("wrapper_module_devices", "ValueError: Must flatten tensors on the same device but got both cuda:0 and cpu"),
    ("ddp_no_trainable_parameters", "RuntimeError: DistributedDataParallel is not needed when a module doesn't "
                                    "have any parameter that requires a gradient."),
    ("ddp_no_trainable_parameters", "AssertionError: DistributedDataParallel is not needed when a module doesn't "
                                    "have any parameter that requires a gradient."),
    ("ddp_uninitialized_parameters", "RuntimeError: Modules with uninitialized parameters can't be used with "
                                     "`DistributedDataParallel`. Run a dummy forward pass to correctly initialize "
                                     "the modules"),
    ("ddp_grad_bucket_view", "RuntimeError: Detected at least one parameter gradient is not the expected DDP bucket "
                             "view with gradient_as_bucket_view=True. This may happen (for example) if multiple "
                             "allreduce hooks were registered onto the same parameter. If you hit this error, please "
                             "file an issue with a minimal repro."),
    ("ddp_grad_bucket_view", "RuntimeError: Can't detach views in-place. Use detach() instead. If you are using "
                             "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, "
                             "gradients are views of DDP buckets, and hence detach_() cannot be called on these "
                             "gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
                             "torch/optim/optimizer.py as the solution."),
    ("fsdp_mixed_requires_grad", "ValueError: Must flatten tensors with uniform `requires_grad` when "
                                 "`use_orig_params=False`"),
    ("fsdp_mixed_requires_grad", "ValueError: model.layers.0.self_attn has both parameters with requires_grad=True "
                                 "and False. FSDP does not support wrapping such modules when use_orig_params=False. "
                                 "If possible, wrap the frozen parameters with FSDP separately."),
    ("dcp_missing_key", "RuntimeError: Missing key in checkpoint state_dict: model.lm_head.weight."),
    ("dcp_size_mismatch", "ValueError: Size mismatch between saved torch.Size([32000, 4096]) and current: "
                          "torch.Size([32008, 4096]) for model.embed_tokens.weight"),
    ("zero_grad_reduced_twice", "AssertionError: The parameter 17 has already been reduced.             Multiple "
                                "gradient reduction is currently not supported"),
    ("zero_grad_reduced_twice", "AssertionError: The parameter model.layers.3.mlp.up_proj.lora_A.default.weight has "
                                "already been reduced.             Gradient computed twice for this partition.      "
                                "       Multiple gradient reductions are currently not supported"),
    ("zero_checkpoint_world_size", "deepspeed.runtime.zero.utils.ZeRORuntimeException: The checkpoint being loaded "
                                   "used a DP world size of 8 but the current world size is 16. Automatic adjustment "
                                   "of ZeRO's optimizer state partitioning with a new world size is not currently "
                                   "supported."),
    ("deepspeed_local_rank_unset", "AssertionError: DeepSpeed requires the LOCAL_RANK environment variable, it is set "
                                   "by the deepspeed launcher, deepspeed.init_distributed, or the torch's launcher. If "
                                   "using a different launcher please ensure LOCAL_RANK is set prior to initializing "
                                   "deepspeed."),
    ("deepspeed_local_rank_unset", "AssertionError: DeepSpeed requires the LOCAL_RANK environment variable, it is set "
                                   "by the deepspeed launcher, deepspeed.init_distributed, or the torch.distributed "
                                   "launcher. If using a different launcher please ensure LOCAL_RANK is set prior to "
                                   "initializing deepspeed."),
    ("deepspeed_local_rank_conflict", "AssertionError: Mismatch in local rank setting, args.local_rank=0 but "
                                      "env['LOCAL_RANK']=1."),
    ("deepspeed_local_rank_conflict", "AssertionError: LOCAL_RANK (0) != OMPI_COMM_WORLD_LOCAL_RANK (1), not sure how "
                                      "to proceed as we're seeing conflicting local rank info."),
]
_SETUP_KIND = {"zero_checkpoint_world_size", "deepspeed_local_rank_unset", "deepspeed_local_rank_conflict"}

# A torchrun worker's NCCL set-up before the failure, and the agent's line after it.
_SETUP = ("node1:2001:2001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
          "node1:2001:2001 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
          "node1:2001:2050 [0] NCCL INFO comm 0x55d0c0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1234 - "
          "Init COMPLETE\n"
          "[rank0]: Traceback (most recent call last):\n"
          '[rank0]:   File "train.py", line 10, in <module>\n')
_AGENT = ("E1129 08:00:00.000000 1999 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: 1) "
          "local_rank: 0 (pid: 2001) of binary: /usr/bin/python\n")


def _verdict(path: Path) -> dict:
    problems: list[str] = []
    sources = resolve([str(path)], lambda e: problems.append(str(e)))
    assert not problems
    return analysis_json(analyze(sources, workers=1))["verdict"]


@pytest.mark.parametrize(("entry", "line"), _FORMS, ids=[f"{e}-{i}" for i, (e, _) in enumerate(_FORMS)])
def test_each_form_is_its_entry(entry, line):
    said = told(line)
    assert said is not None and said.id == entry


@pytest.mark.parametrize("setup", [False, True], ids=["alone", "after_setup"])
@pytest.mark.parametrize(("entry", "line"), _FORMS, ids=[f"{e}-{i}" for i, (e, _) in enumerate(_FORMS)])
def test_each_form_reads_as_its_entry_with_its_fix_first(tmp_path, entry, line, setup):
    """The rank that raised it failed first, for the reason its line states, and the first step is the entry's (a
    world size a checkpoint cannot be loaded under, and a local rank the launcher did not give, are the job's
    set-up)."""
    log = tmp_path / "rank.log"
    log.write_text((_SETUP if setup else "") + f"[rank0]: {line}\n" + (_AGENT if setup else ""))
    v = _verdict(log)
    assert v["kind"] == ("setup_failure" if entry in _SETUP_KIND else "rank_failed_first")
    assert v["cause"]["kind"] == "stated_reason"
    assert v["next_steps"][0] == _FIX[entry]


@pytest.mark.parametrize(("case", "entry"), [
    ("no_trainable", "ddp_no_trainable_parameters"), ("lazy", "ddp_uninitialized_parameters"),
    ("device_ids_cpu", "wrapper_module_devices"), ("dcp_missing_key", "dcp_missing_key"),
    ("dcp_size", "dcp_size_mismatch")])
def test_recorded_runs_read_as_their_entry(case, entry):
    """Both ranks raised the check under torchrun (DCP's wrapped in a CheckpointException listing both ranks'
    failures): both are culprits, and the first step is the entry's."""
    v = _verdict(DATA / "framework_checks" / case / "console.log")
    assert v["kind"] == "rank_failed_first"
    assert v["culprit_ranks"] == [0, 1]
    assert v["cause"]["kind"] == "stated_reason"
    assert v["next_steps"][0] == _FIX[entry]


def test_a_detach_of_no_bucket_view_is_not_ddps():
    """autograd's own refusal to detach a view in place, without DDP's sentence (before 1.8, or of any other view),
    is not the bucket-view entry."""
    said = told("RuntimeError: Can't detach views in-place. Use detach() instead")
    assert said is None or said.id != "ddp_grad_bucket_view"
