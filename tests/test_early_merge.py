"""The timeout records merged while the workers read (job/analyze.py ``Early``) are the analysis's own merge: taken
only where the scans are the very scans merged, in the same order, and the answer is the same either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_scale import _synth

from ncclcheck.evidence.reader import resolve
from ncclcheck.job import analyze as analyze_mod
from ncclcheck.job.analyze import Early, analyze, analyze_scans, read_all
from ncclcheck.render.json_out import analysis_json


def _taken(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """Each ``Early.take``'s answer, as its record count (None: merged again)."""
    seen: list[int | None] = []
    take = Early.take

    def spy(self: Early, scans):  # type: ignore[no-untyped-def]
        out = take(self, scans)
        seen.append(None if out is None else len(out))
        return out

    monkeypatch.setattr(analyze_mod.Early, "take", spy)
    return seen


def _json(result) -> str:  # type: ignore[no-untyped-def]
    return json.dumps(analysis_json(result, True), sort_keys=True)


@pytest.mark.parametrize("workers", [1, 2])
def test_records_merged_while_reading_equal_the_merge_after(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            workers: int) -> None:
    folder = _synth(tmp_path, 4, 8, 13, 4)
    sources = resolve([str(folder)], print)
    scans, problems = read_all(sources, workers=1)
    plain = analyze_scans(scans, problems=problems)  # no early records: merged after the reading
    taken = _taken(monkeypatch)
    monkeypatch.setattr("ncclcheck.evidence.scan.PARALLEL_MIN_FILES", 2)  # the 8 files read by the workers
    early = analyze(sources, workers=workers)
    assert taken == [len(plain.records)] and len(plain.records) > 8  # the early records were used
    assert _json(early) == _json(plain)
    assert early.verdict.culprit_ranks == (13,)


def test_inputs_out_of_name_order_are_merged_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _synth(tmp_path, 4, 8, 13, 4)
    sources = resolve([str(folder)], print)
    in_order = analyze(sources, workers=1)
    taken = _taken(monkeypatch)
    backwards = analyze(list(reversed(sources)), workers=1)  # analyze_scans sorts them: the merge order differs
    assert taken == [None]
    assert _json(backwards) == _json(in_order)
