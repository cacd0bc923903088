"""Shared fixtures and helpers."""

from __future__ import annotations

import itertools
import os
import sys
import tempfile
from pathlib import Path

# Where PYTHONDONTWRITEBYTECODE is set (this VM sets it), every process of the run compiled every module it imported
# from source, pytest rewrote every test module's asserts again in each worker, and each of the ~150 child processes
# (``python -m ncclcheck``, torchrun's workers) compiled the package anew: about 0.4 s of CPU each. The run keeps its
# bytecode in one folder of its own instead (PYTHONPYCACHEPREFIX: never beside the sources, as that setting wants),
# shared by the workers and the children and removed at the end (``pytest_unconfigure``). Made here, before the
# package is imported, so that the package's own modules are kept there too.
if sys.dont_write_bytecode and not os.environ.get("NCCLCHECK_TEST_PYCACHE"):
    os.environ["NCCLCHECK_TEST_PYCACHE"] = tempfile.mkdtemp(prefix="ncclcheck-pycache-")
    os.environ["NCCLCHECK_TEST_PYCACHE_OWNER"] = str(os.getpid())
# The analyses of kept fixtures (tests/analysed.py) are shared by the run's xdist workers through one folder too: the
# properties over every fixture fall in both workers' halves of the run, and each analysed the same 2,200 inputs
# (about 17 s of CPU) where one can read the other's (about 2 s). Made by the run's first process, removed at the end.
if not os.environ.get("NCCLCHECK_TEST_ANALYSES"):
    os.environ["NCCLCHECK_TEST_ANALYSES"] = tempfile.mkdtemp(prefix="ncclcheck-analyses-")
    os.environ["NCCLCHECK_TEST_ANALYSES_OWNER"] = str(os.getpid())
if os.environ.get("NCCLCHECK_TEST_PYCACHE"):
    os.environ["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix = os.environ["NCCLCHECK_TEST_PYCACHE"]
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    from installed_bytecode import InstalledBytecode  # noqa: E402

    InstalledBytecode.install()

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from ncclcheck.evidence.reader import Source, resolve  # noqa: E402
from ncclcheck.job.analyze import analyze  # noqa: E402
from ncclcheck.job.model import Analysis  # noqa: E402

# Time limits belong to the benchmarks: hypothesis's default 200 ms deadline per example fails correct code on a
# loaded two-core machine (test_exact_means_exact did, at 230 ms), so no property test has one.
settings.register_profile("ncclcheck", deadline=None)
settings.load_profile("ncclcheck")

DATA = Path(__file__).parent / "data"
REAL = DATA / "real"
CONFORMANCE = Path(__file__).resolve().parents[1].parent / "shared" / "conformance"


def run(*paths: str | os.PathLike[str]) -> Analysis:
    """Analyse paths the way the CLI does, failing on unreadable inputs."""
    errors: list[str] = []
    sources = resolve([str(p) for p in paths], lambda e: errors.append(str(e)))
    assert not errors, errors
    return analyze(sources, workers=1)


def thread_log(n: str) -> Path:
    """The log of public thread ``n`` (tests/data/public_threads/NN-project-issue-slug.log)."""
    return next((DATA / "public_threads").glob(f"{n}-*.log"))


def run_text(text: str) -> Analysis:
    """The analysis of one console holding ``text``."""
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "console.log"
        log.write_text(text)
        return run(log)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The process that made the run's bytecode and analyses folders removes them (an xdist worker leaves them to the
    controller)."""
    import shutil

    if os.environ.get("NCCLCHECK_TEST_PYCACHE_OWNER") == str(os.getpid()):
        shutil.rmtree(os.environ["NCCLCHECK_TEST_PYCACHE"], ignore_errors=True)
    if os.environ.get("NCCLCHECK_TEST_ANALYSES_OWNER") == str(os.getpid()):
        shutil.rmtree(os.environ["NCCLCHECK_TEST_ANALYSES"], ignore_errors=True)


@pytest.fixture(scope="session")
def _table_caches(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every test's table cache is made in. Not one ``tmp_path_factory.mktemp`` each: pytest numbers its
    folders by listing their parent, so one a test costs as much as the tests before it (33 s of CPU for 6,000)."""
    return tmp_path_factory.mktemp("caches")


@pytest.fixture(autouse=True)
def _width_from_each_run() -> None:
    """Rich fixes a console's width from COLUMNS when the console is made (once, at import): each CliRunner call's
    COLUMNS must count, whichever test imported the console first, so the width is read anew for every test."""
    from ncclcheck.console import console, err_console

    console._width = err_console._width = None  # Rich's own attribute: None reads COLUMNS at every render


_CACHES = itertools.count()


@pytest.fixture(autouse=True)
def _own_table_cache(_table_caches: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets an empty table cache of its own: none reads another's tables or the user's. The folder is named,
    not made: ncclcheck makes its cache folder when it first writes there (as a user's first run does), and most
    tests never write one. Making one a test cost a folder made and, when pytest clears an old run's folders at the
    start of a later run, one removed: about 3 ms a test on this VM (30 s of a 9,000-test run), mostly the removal."""
    monkeypatch.setenv("NCCLCHECK_CACHE_DIR", str(_table_caches / str(next(_CACHES))))  # one process's own numbers
    monkeypatch.delenv("NCCLCHECK_NO_CACHE", raising=False)


@pytest.fixture
def write(tmp_path: Path):
    """Write a log file from lines and return its path."""

    def _write(name: str, *lines: str, data: bytes | None = None) -> Path:
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if data is not None else ("\n".join(lines) + "\n").encode())
        return p

    return _write


__all__ = ["CONFORMANCE", "DATA", "REAL", "Source", "run"]
