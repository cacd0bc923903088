"""Golden tests on logs PyTorch 2.11 / NCCL 2.28.9 wrote on 2xH200 (tools/incident.py, tools/make_incidents.sh).

Each scenario is read twice: as torchrun's per-rank log directory and as torchrun's combined
``--tee`` console output.  The expected records and verdict are in tests/data/expected/.
"""

from __future__ import annotations

import json

import pytest
from conftest import DATA, REAL, run

from ncclcheck.render.json_out import analysis_json

SCENARIOS = sorted(p.name for p in REAL.iterdir() if p.is_dir())


def _golden(a) -> dict:
    j = analysis_json(a, per_rank=True)
    v = j["verdict"]
    return {
        "records": j["per_rank"]["records"],
        "verdict": {k: v[k] for k in ("kind", "culprit_ranks", "waiting_ranks", "pg", "seq")},
    }


@pytest.mark.parametrize("layout", ["attempt_0", "console.log"])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_real_incident(scenario, layout, monkeypatch):
    """Records and verdict equal the reviewed golden JSON exactly."""
    monkeypatch.chdir(REAL)
    got = _golden(run(f"{scenario}/{layout}"))
    expected = json.loads((DATA / "expected" / f"{scenario}.{layout}.json").read_text())
    assert got == expected


@pytest.mark.parametrize(
    ("scenario", "kind", "culprits"),
    [
        ("sleep", "lagging_rank", [1]),
        ("sleep-info", "lagging_rank", [1]),
        # Two ranks, two different collectives, text logs only: no majority and no earlier step to compare with,
        # so no rank is named (the collective-stack finding shows where each issued its own).
        ("barrier", "collective_mismatch", []),
        ("uneven", "collective_mismatch", []),
        ("uneven-info-desync", "collective_mismatch", []),
        ("mismatch", "collective_mismatch", []),
        ("exception", "rank_failed_first", [1]),
    ],
)
def test_real_verdicts_name_the_right_rank(scenario, kind, culprits):
    """The rank the scenario made misbehave is the one named, and only with a reason (independent of the goldens)."""
    v = run(REAL / scenario / "attempt_0").verdict
    assert (v.kind.value, list(v.culprit_ranks)) == (kind, culprits)


@pytest.mark.parametrize("layout", ["attempt_0", "console.log"])
def test_stack_of_the_failed_collective(layout):
    """PyTorch 2.6+ prints each rank's Python stack: the finding names the line of user code per rank."""
    a = run(REAL / "barrier" / layout)
    stack = next(f for f in a.verdict.findings if f.code == "collective-stack")
    assert stack.message.endswith("rank 0: barrier from main at /work/main/tools/incident.py:40; "
                                  "rank 1: all_reduce from main at /work/main/tools/incident.py:41.")
