"""Each fixture input analysed once a test session, shared by the tests that hold a property over every fixture.

Several files check a property of every input under tests/data (test_partition, test_actions, test_stated, test_keep,
test_no_unknowns, test_hangs, test_scale): each used to read and analyse the same 1,600 inputs again, most of
``make test``'s time. Here the analysis of one input is made once and handed to each; every test still asserts what
it asserted on the analysis it would have made itself. The key holds everything a test changes that the analysis
reads: the input's absolute path and the reader's settings (``ENGINE``, ``HEAD``, ``FULL``, which test_keep varies).
Under xdist the workers share them too (one pickled file a key in the run's folder), as each worker's half of the
run holds some of those properties.
Only inputs kept in the repository (or the shared conformance set) are cached: a file a test writes may be rewritten
under the same name. The results are shared: a caller reads them, never changes them.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
from pathlib import Path
from typing import Any

from conftest import CONFORMANCE

from ncclcheck.evidence import reader
from ncclcheck.job.analyze import analyze
from ncclcheck.job.model import Analysis
from ncclcheck.render.json_out import analysis_json

ROOT = Path(__file__).resolve().parent.parent
_KEPT = (ROOT / "tests" / "data", ROOT / "examples", CONFORMANCE)


def _key(path: str | os.PathLike[str]) -> tuple[str, str, int, bool]:
    p = Path(path)
    assert p.is_absolute() and any(p.is_relative_to(top) for top in _KEPT), f"not a kept fixture: {p}"
    return str(p), reader.ENGINE, reader.HEAD, reader.FULL


@functools.cache
def _analysis(path: str, engine: str, head: int, full: bool) -> tuple[tuple[str, ...], Analysis]:
    """The input's errors of resolving and its analysis, as conftest.run and the CLI make it (one worker), or as
    another xdist worker of the run made it: kept pickled in the run's folder (conftest.py), written whole or not at
    all (a rename), so a worker reads a finished analysis or makes its own."""
    assert (engine, head, full) == (reader.ENGINE, reader.HEAD, reader.FULL)
    shared = None
    if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("NCCLCHECK_TEST_ANALYSES"):
        name = hashlib.sha256(repr((path, engine, head, full)).encode()).hexdigest()
        shared = Path(os.environ["NCCLCHECK_TEST_ANALYSES"]) / name
        try:
            made: tuple[tuple[str, ...], Analysis] = pickle.loads(shared.read_bytes())
            return made
        except FileNotFoundError:
            pass
    errors: list[str] = []
    sources = reader.resolve([path], lambda e: errors.append(str(e)))
    made = tuple(errors), analyze(sources, workers=1)
    if shared is not None:
        part = shared.with_name(f"{shared.name}.{os.getpid()}")
        part.write_bytes(pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(part, shared)
    return made


def resolved(path: str | os.PathLike[str]) -> tuple[tuple[str, ...], Analysis]:
    """The errors found resolving ``path`` (an unreadable input) and the analysis of what could be read."""
    return _analysis(*_key(path))


def analysed(path: str | os.PathLike[str]) -> Analysis:
    """conftest.run(path), made once: the analysis, failing on an unreadable input."""
    errors, a = resolved(path)
    assert not errors, errors
    return a


@functools.cache
def _report(key: tuple[str, str, int, bool], per_rank: bool) -> dict[str, Any]:
    errors, a = _analysis(*key)
    assert not errors, errors
    return analysis_json(a, per_rank=per_rank)


def report(path: str | os.PathLike[str], per_rank: bool = False) -> dict[str, Any]:
    """analysis_json(run(path), per_rank), made once."""
    return _report(_key(path), per_rank)
