"""PyTorch's flight-recorder analyzer test cases (test_fr_analysis.py), as real dumps: ncclcheck finds what the
analyzer's own tests assert, names both sides, and blames no rank where two ranks disagree.

The dumps and cases.json are written by tools/fr_cases.py; each case's ``expect`` is the test's assertion (checked
against torch 2.13's build_db with rank 0's dump read first, as the test orders them: tests/data/frdump/
analyzer_cases/README.md).
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import DATA, run

from ncclcheck.job.frmatch import FIELDS
from ncclcheck.ranks import rank_phrase

CASES = DATA / "frdump" / "analyzer_cases"
INDEX = {c["case"]: c for c in json.loads((CASES / "cases.json").read_text())}


def _said(v) -> str:
    return " ".join((v.summary, *(f.message for f in v.findings)))


@pytest.mark.parametrize("name", sorted(INDEX))
def test_analyzer_case(name):
    case = INDEX[name]
    expect = case["expect"]
    v = run(CASES / name).verdict
    text = _said(v)
    if expect["finding"] == "match":
        assert v.kind.value != "collective_mismatch", v.summary
        assert not any(f.code == "fr-history" for f in v.findings), text
        assert "disagree" not in text
        return
    # Both sides, by value and ranks, at the test's sequence number; no rank blamed where two ranks disagree.
    for value, ranks in expect["sides"].items():
        # "rank 0: 4x4" (the history's words) or "rank 0: ALLREDUCE 4x4 Float" (the stuck collective's signature)
        assert re.search(rf"{re.escape(rank_phrase(ranks))}: (?:[A-Z_]+ )?{re.escape(value)}\b", text), (value, text)
    assert f"#{expect['seq']} of PG 0 (default)" in text
    if "op" in expect:
        assert f"op {expect['op']} of its coalesced block" in text
    assert v.culprit_ranks == ()
    if expect["finding"] == "state":  # the calls agree: no mismatch, only the ranks' progress
        assert v.kind.value != "collective_mismatch"
        assert "disagree on state" in text
    else:
        assert v.kind.value == "collective_mismatch", v.summary
        if expect["finding"] not in ("op", "input_sizes", "syntax"):  # the signature in the hang's words says those
            assert FIELDS[expect["finding"]] in text


def test_every_case_is_a_fixture():
    """19 cases, each a folder of two ranks' dumps."""
    assert len(INDEX) == 19
    for name in INDEX:
        assert sorted(p.name for p in (CASES / name).iterdir()) == ["comm_lib_trace_rank_0", "comm_lib_trace_rank_1"]
