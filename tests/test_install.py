"""The package as pip installs it: a wheel built from a copy of the sources, installed outside the checkout.

Needs setuptools (the build backend; part of the `test` extra) and, for the benchmark run, torch. Where either is
missing the test is skipped with the reason, except under CI (.ci/run sets NCCLCHECK_CI=1), where it fails.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def need(ok: bool, reason: str) -> None:
    """Skip with the reason, or fail under CI, where nothing may be skipped for want of a tool."""
    if not ok:
        (pytest.fail if os.environ.get("NCCLCHECK_CI") else pytest.skip)(reason)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the package sources (the checkout is left untouched)."""
    need(importlib.util.find_spec("setuptools") is not None,
         "setuptools (the build backend) is not installed: pip install 'ncclcheck[test]'")
    src = tmp_path_factory.mktemp("src")
    shutil.copytree(ROOT / "ncclcheck", src / "ncclcheck", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                        str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    [whl] = out.glob("ncclcheck-*.whl")
    return whl


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed into its own folder (dependencies come from this interpreter's environment)."""
    target = tmp_path_factory.mktemp("site")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return target


def run_installed(site: Path, module: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` from a folder outside the checkout, refusing to run a module not from ``site``.

    The development environment's editable install would otherwise supply whatever the wheel lacks.
    """
    code = ("import importlib.util, runpy, sys\n"
            "module, site = sys.argv[1], sys.argv[2]\n"
            "origin = importlib.util.find_spec(module).origin\n"
            "if not origin.startswith(site):\n"
            "    sys.exit(f'{module} imported from {origin}, not from the installed copy')\n"
            "sys.argv = [sys.argv[0], *sys.argv[3:]]\n"
            "runpy.run_module(module, run_name='__main__', alter_sys=True)\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-c", code, module, str(site), *args], capture_output=True, text=True,
                          env=env, cwd=site.parent, timeout=timeout)


def test_wheel_holds_every_module_and_the_entry_point(wheel: Path):
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "ncclcheck").rglob("*.py")}
    assert sources <= names, sorted(sources - names)
    causes = {p.relative_to(ROOT).as_posix() for p in (ROOT / "ncclcheck" / "job" / "catalogue").glob("*.toml")}
    assert causes and causes <= names, sorted(causes - names)  # the failure catalogue is data, read at run time
    data = {p.relative_to(ROOT).as_posix() for p in (ROOT / "ncclcheck").rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}
    assert "ncclcheck/job/regressions.toml" in data and data <= names, sorted(data - names)  # every data file read
    for module in ("ncclcheck/bench/__main__.py", "ncclcheck/probe/names.py", "ncclcheck/evidence/reader.py"):
        assert module in names
    [entry] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert "ncclcheck = ncclcheck.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_installed_copy_is_the_one_imported(installed: Path):
    modules = ("ncclcheck.bench.__main__", "ncclcheck.cli", "ncclcheck.probe.names", "ncclcheck.evidence.reader")
    code = "import importlib.util, sys; print(*(importlib.util.find_spec(m).origin for m in sys.argv[1:]), sep='\\n')"
    r = subprocess.run([sys.executable, "-c", code, *modules], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(installed)}, cwd=installed.parent)
    assert r.returncode == 0, r.stderr
    origins = r.stdout.split()
    assert len(origins) == len(modules) and all(Path(o).is_relative_to(installed) for o in origins), origins


def test_installed_benchmark_help(installed: Path):
    r = run_installed(installed, "ncclcheck.bench", "--help")
    assert r.returncode == 0, r.stderr
    assert "--size" in r.stdout and "--chunks" in r.stdout


def test_installed_cli_runs(installed: Path):
    r = run_installed(installed, "ncclcheck", "--version")
    assert (r.returncode, r.stderr) == (0, "") and r.stdout.startswith("ncclcheck ")


def test_installed_benchmark_runs_on_cpu(installed: Path):
    """A one-process gloo run of the installed benchmark (without torchrun it runs as world size 1)."""
    need(importlib.util.find_spec("torch") is not None,
         "torch is not installed: pip install 'ncclcheck[bench]' (or make test)")
    r = run_installed(installed, "ncclcheck.bench", "--size", "1000", "--chunks", "", "--iters", "1",
                      "--warmup", "0", "--backend", "gloo", "--json", timeout=240)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["schema_version"] == 1


def test_the_build_backend_warns_of_nothing(tmp_path: Path):
    """`make demo` installs the package first: the backend reading pyproject.toml must print no deprecation warning
    (the license as an SPDX string, not a table), checked with every warning an error."""
    need(importlib.util.find_spec("setuptools") is not None,
         "setuptools (the build backend) is not installed: pip install 'ncclcheck[test]'")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "ncclcheck", tmp_path / "ncclcheck", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "out").mkdir()
    r = subprocess.run([sys.executable, "-W", "error", "-c", "import setuptools.build_meta as b; "
                        "b.prepare_metadata_for_build_wheel('out')"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
