"""Public threads whose cause the thread confirmed: analyze-log must give the thread's verdict, cause, culprit ranks
and a fix the thread confirmed (tests/data/public_threads/, scored by tools/bench_truth.py, ``make bench-truth``).

A case analyze-log gets wrong today is listed once, in KNOWN_MISSES.md, with the mechanism that misses it; it runs
as a strict xfail, so a fix that makes it right fails here until its line is removed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from analysed import report
from conftest import DATA

from ncclcheck.job.causes import ALL_CAUSES
from ncclcheck.job.model import VerdictKind

sys.path.insert(0, str(Path(__file__).parent.parent / "tools"))
import bench_truth  # noqa: E402

CORPUS = DATA / "public_threads"
LOGS = bench_truth.cases()
MISSES = bench_truth.known_misses()
# every cause a truth may name: the catalogue's line-matched causes and those the verdict's rules name
CAUSES = {c.kind for c in ALL_CAUSES}


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_thread_verdict(log: Path, request):
    """The thread's kind, cause, culprits and fix, or the known miss fails for the mechanism listed."""
    if log.stem in MISSES:
        request.node.add_marker(pytest.mark.xfail(strict=True, reason=MISSES[log.stem]))
    # the verdict of analyze-log --json, made once a worker (tests/analysed.py: test_keep and test_stated read it too)
    assert bench_truth.differences(log, report(log)["verdict"]) == []


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_sidecar_is_truth_of_known_words(log: Path):
    """Every sidecar names the thread (a GitHub issue, or a practitioner's write-up at its own address), quotes its confirmation, and uses only the verdict's and catalogue's words."""
    t = bench_truth.truth(log)
    assert t["source"].startswith("https://") and t["project"] in t["source"]  # a thread, or one practitioner's write-up
    assert t["confirmation"].strip()
    kinds = t["kind"] if isinstance(t["kind"], list) else [t["kind"]]
    assert set(kinds) <= {k.value for k in VerdictKind}
    assert t["cause"] is None or t["cause"] in CAUSES
    assert all(isinstance(r, int) and r >= 0 for r in t["culprit_ranks"])
    re.compile(t["fix"])
    assert log.read_text(encoding="utf-8").strip()


def test_known_misses_name_cases():
    """The list of misses names only cases that exist, each with its mechanism."""
    stems = {p.stem for p in LOGS}
    assert set(MISSES) <= stems
    assert all(len(m) > 20 for m in MISSES.values())


def test_corpus_is_broad():
    """At least 40 threads from at least 20 projects, each a .log with its sidecar."""
    assert len(LOGS) >= 40
    assert len({bench_truth.truth(p)["project"] for p in LOGS}) >= 20
    assert {p.stem for p in CORPUS.glob("*.json")} == {p.stem for p in LOGS}
