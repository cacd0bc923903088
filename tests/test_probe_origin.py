"""Who set a variable: the user, the launcher, the image or the container; each finding speaks to whoever can act.

tests/data/hosts/h200-torchrun-env.json is real: a torchrun worker's environment on 2 x H200, its torchrun agent's,
and process 1's (tools/capture_env.py).
"""

from __future__ import annotations

import json
from dataclasses import replace

from conftest import DATA

from ncclcheck.findings import Severity
from ncclcheck.probe.host import Host, collect, origin_of, settings
from ncclcheck.probe.lint import lint

CAPTURE = json.loads((DATA / "hosts" / "h200-torchrun-env.json").read_text())
FR = {"TORCH_FR_DUMP_ON_TIMEOUT": "1", "TORCH_FR_BUFFER_SIZE": "2000"}  # what a user exports before torchrun


def _lint(worker: dict[str, str], launcher: dict[str, str] | None, tmp_path, init: dict[str, str] | None = None):
    root = tmp_path / "root"
    (root / "proc" / "1").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "1" / "environ").write_bytes(b"\0".join(f"{k}={v}".encode() for k, v in (init or {}).items()))
    host = Host(root=str(root), env=worker, home=str(tmp_path))
    probe = replace(collect(host, with_versions=False), settings=settings(host, launcher))
    return {f.code: f for f in lint(probe)}, probe


def test_real_torchrun_worker(tmp_path):
    """torchrun added TORCH_NCCL_ASYNC_ERROR_HANDLING=1; the CUDA image recorded NCCL_VERSION: neither is the
    user's mistake, and neither is called one."""
    worker = {**CAPTURE["worker"], **FR}
    launcher = {**CAPTURE["launcher"], **FR}
    found, probe = _lint(worker, launcher, tmp_path, CAPTURE["init"])
    origins = {s.name: s.origin for s in probe.settings}
    assert origins["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "launcher" and origins["NCCL_VERSION"] == "image"
    assert origins["TORCH_FR_DUMP_ON_TIMEOUT"] == "user"
    assert "unknown-name" not in found
    image = found["image-variable"]
    assert image.severity is Severity.INFO and "NCCL_VERSION=2.28.3-1" in image.message
    aeh = found["error-handling-vs-dump"]
    assert aeh.severity is Severity.INFO and "set by the launcher" in aeh.message
    assert aeh.fix is not None and "export TORCH_NCCL_ASYNC_ERROR_HANDLING=3 before starting torchrun" in aeh.fix


def test_users_own_setting_is_still_a_warning(tmp_path):
    """The same value exported by the user (the launcher has it too) is the user's to change."""
    worker = {**FR, "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}
    found, _ = _lint(worker, dict(worker), tmp_path)
    assert found["error-handling-vs-dump"].severity is Severity.WARNING


def test_platform_wide_workaround_is_information(tmp_path):
    """NCCL_NVLS_ENABLE=0 in process 1's environment: set for the whole container, not by this shell."""
    found, _ = _lint({"NCCL_NVLS_ENABLE": "0"}, None, tmp_path, {"NCCL_NVLS_ENABLE": "0"})
    assert "debug-variable" not in found
    assert found["platform-setting"].severity is Severity.INFO
    mine, _ = _lint({"NCCL_NVLS_ENABLE": "0"}, None, tmp_path)
    assert mine["debug-variable"].severity is Severity.WARNING and "if the platform did, keep it" in (
        mine["debug-variable"].fix or "")


def test_origin_rules():
    assert origin_of("NCCL_VERSION", "2.21.5", {}, None) == "image"
    assert origin_of("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", {}, {"PATH": "/bin"}) == "launcher"
    assert origin_of("NCCL_IB_HCA", "mlx5", {"NCCL_IB_HCA": "mlx5"}, None) == "container"
    assert origin_of("NCCL_IB_HCA", "mlx5", {"NCCL_IB_HCA": "mlx5_1"}, None) == "user"
