"""Where a process's exception was raised (job/raisesite.py): a framework's own assertion, a communication path.

Every traceback is written from CPython's format (Lib/traceback.py, StackSummary.format: ``  File "<file>", line <n>,
in <function>`` outermost first, then ``<name>: <message>``), under the prefixes launchers and loggers put before it
(torchrun's ``[rankN]:``, vLLM's logger ``ERROR <mm-dd> <clock> [<file>:<line>]``, Ray's ``(Actor pid=N)``); the
paths are the frameworks' own files (vllm/v1/worker/gpu_worker.py, vllm/distributed/device_communicators/*.py,
sglang/srt/distributed/device_communicators/custom_all_reduce.py, torch/distributed/_symmetric_memory/__init__.py).
"""

from __future__ import annotations

from conftest import run_text, thread_log

from ncclcheck.job.raisesite import call_paths, package

SITE = "/usr/local/lib/python3.12/dist-packages"


def _findings(text: str) -> dict[str, object]:
    v = run_text(text).verdict
    return {f.code: f for f in v.findings if f.code in ("framework-check", "call-path")}


def test_a_frames_package_from_site_packages_or_a_checkout():
    assert package(f"{SITE}/vllm/v1/worker/gpu_worker.py") == ("vllm", "vllm/v1/worker/gpu_worker.py")
    assert package("/home/u/src/vllm/vllm/v1/worker/gpu_worker.py") == ("vllm", "vllm/v1/worker/gpu_worker.py")
    assert package("C:\\py\\Lib\\site-packages\\deepspeed\\runtime\\engine.py") == ("deepspeed",
                                                                                   "deepspeed/runtime/engine.py")
    assert package("/opt/conda/lib/python3.12/site-packages/six.py") == ("six", "six.py")
    # the job's own script and the standard library are no installed package
    assert package("/workspace/train.py") is None
    assert package("/usr/lib/python3.12/multiprocessing/process.py") is None


def test_an_assertion_in_a_frameworks_own_code_is_its_check_with_its_release_as_the_step():
    text = "\n".join((
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/workspace/train.py", line 40, in <module>',
        "[rank1]:     engine = deepspeed.initialize(model=model, config=cfg)",
        f'[rank1]:   File "{SITE}/deepspeed/runtime/engine.py", line 1320, in _configure_zero_optimizer',
        "[rank1]:     assert not self.has_moe_layers, \"MoE not supported with Stage 3\"",
        "[rank1]: AssertionError: MoE not supported with Stage 3",
        "DeepSpeed version: 0.14.4", ""))
    f = _findings(text)["framework-check"]
    assert "DeepSpeed's own check" in f.message and "deepspeed/runtime/engine.py:1320" in f.message
    assert "upgrade DeepSpeed" in (f.fix or "")
    assert "call-path" not in _findings(text)


def test_the_jobs_own_assertion_and_a_frameworks_raised_error_are_not_its_check():
    own = "\n".join(("Traceback (most recent call last):", '  File "/workspace/train.py", line 12, in <module>',
                     "    assert batch.shape[0] == 8", "AssertionError", ""))
    assert "framework-check" not in _findings(own)
    raised = "\n".join(("Traceback (most recent call last):",
                        f'  File "{SITE}/vllm/config/parallel.py", line 301, in __post_init__',
                        "    raise ValueError(msg)", "ValueError: tensor_parallel_size must divide the heads", ""))
    assert "framework-check" not in _findings(raised)


def test_each_process_traceback_is_kept_apart_by_its_prefix_and_the_loggers_clock_left_off():
    text = "\n".join((
        "ERROR 12-08 20:46:55 [multiproc_executor.py:597] Traceback (most recent call last):",
        'ERROR 12-08 20:46:55 [multiproc_executor.py:597]   File "/x/vllm/vllm/distributed/device_communicators/'
        'custom_all_reduce.py", line 96, in __init__',
        '[rank0]:   File "/workspace/other.py", line 3, in <module>',
        'ERROR 12-08 20:46:56 [multiproc_executor.py:597]   File "/x/vllm/vllm/distributed/device_communicators/'
        'custom_all_reduce_utils.py", line 240, in gpu_p2p_access_check',
        "ERROR 12-08 20:46:56 [multiproc_executor.py:597] RuntimeError: CUDA error: peer access is not supported "
        "between these two devices", ""))
    f = _findings(text)["call-path"]
    assert "custom all-reduce" in f.message and "custom_all_reduce_utils.py:240" in f.message
    assert "--disable-custom-all-reduce" in (f.fix or "") and "vLLM" in (f.fix or "")
    assert "SGLang" not in (f.fix or "")  # the traceback is vLLM's: its switch alone


def test_torchs_symmetric_memory_names_the_frameworks_file_that_called_it():
    text = "\n".join((
        "(RayWorkerWrapper pid=812, ip=10.0.0.2) Traceback (most recent call last):",
        f'(RayWorkerWrapper pid=812, ip=10.0.0.2)   File "{SITE}/vllm/distributed/device_communicators/symm_mem.py", line 88, '
        "in __init__",
        "(RayWorkerWrapper pid=812, ip=10.0.0.2)     handle = torch_symm_mem.rendezvous(self.buffer, self.group.group_name)",
        f'(RayWorkerWrapper pid=812, ip=10.0.0.2)   File "{SITE}/torch/distributed/_symmetric_memory/__init__.py", line 1711, '
        "in rendezvous",
        "(RayWorkerWrapper pid=812, ip=10.0.0.2)     return _SymmetricMemory.rendezvous(tensor, group_name)",
        "(RayWorkerWrapper pid=812, ip=10.0.0.2) RuntimeError: CUDA driver error: operation not supported", ""))
    f = _findings(text)["call-path"]
    assert "PyTorch's symmetric memory" in f.message
    assert "called from vllm/distributed/device_communicators/symm_mem.py:88" in f.message
    assert "VLLM_ALLREDUCE_USE_SYMM_MEM=0" in (f.fix or "")


def test_a_path_with_no_switch_is_named_without_one_and_the_table_is_well_formed():
    text = "\n".join(("Traceback (most recent call last):",
                      f'  File "{SITE}/sglang/srt/distributed/device_communicators/pynccl.py", line 120, in all_reduce',
                      "RuntimeError: NCCL error: unhandled system error", ""))
    f = _findings(text)["call-path"]
    assert "own NCCL communicator" in f.message and f.fix is None
    ids = [p.id for p in call_paths()]
    assert len(ids) == len(set(ids)) and all(p.files and p.source for p in call_paths())


def test_the_public_threads_call_site_and_framework_check():
    f = _findings(thread_log("223").read_text())["call-path"]
    assert "symmetric memory" in f.message and "VLLM_ALLREDUCE_USE_SYMM_MEM=0" in (f.fix or "")
    f = _findings(thread_log("228").read_text())["framework-check"]
    assert "vLLM's own check" in f.message and "vllm/v1/worker/gpu_worker.py:212" in f.message
