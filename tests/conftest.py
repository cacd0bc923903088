"""Shared fixtures and helpers."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

from ncclcheck.evidence.reader import Source, resolve
from ncclcheck.job.analyze import analyze
from ncclcheck.job.model import Analysis

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


@pytest.fixture(autouse=True)
def _own_table_cache(_table_caches: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets an empty table cache of its own: none reads another's tables or the user's."""
    monkeypatch.setenv("NCCLCHECK_CACHE_DIR", tempfile.mkdtemp(dir=_table_caches))
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
