"""The timeout records merged while the workers read (job/analyze.py ``Early``) are the analysis's own merge: taken
only where the scans are the very scans merged, in the same order, and the answer is the same either way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_scale import _synth

from ncclcheck.evidence.reader import Source, resolve
from ncclcheck.job import analyze as analyze_mod
from ncclcheck.job.analyze import Early, analyze, analyze_scans, read_all
from ncclcheck.job.model import Analysis
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


def _parts(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """For each input merged while reading: whether its worker's records were taken as they were."""
    from ncclcheck.job.records import Merger

    seen: list[bool] = []
    apart = Merger._apart

    def spy(self: Merger, part):  # type: ignore[no-untyped-def]
        out = apart(self, part)
        seen.append(out)
        return out

    monkeypatch.setattr(Merger, "_apart", spy)
    return seen


def _read_in_one_then_spied(folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Source], Analysis, list[bool]]:
    """The folder's inputs, their analysis read in one process, and the spy on the parts taken once workers read
    (from two files on)."""
    sources = resolve([str(folder)], print)
    scans, problems = read_all(sources, workers=1)
    plain = analyze_scans(scans, problems=problems)
    parts = _parts(monkeypatch)
    monkeypatch.setattr("ncclcheck.evidence.scan.PARALLEL_MIN_FILES", 2)
    return sources, plain, parts


def test_each_inputs_records_come_merged_from_its_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _synth(tmp_path, 4, 8, 13, 8)
    sources, plain, parts = _read_in_one_then_spied(folder, monkeypatch)
    assert _json(analyze(sources, workers=2)) == _json(plain)
    # each node's ranks are its own: no input's records merge with another's; the straggler's node (rank 13 prints no
    # timeout: 14 mentions) is merged here
    assert parts == [True] * 3


def test_a_rank_in_two_inputs_is_merged_across_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rank's timeout printed in two inputs (its console and a copy of it, a file per rank beside a node's
    console) is one record: the second input's mentions merge into the first's records, not beside them. The first
    input's records came built from its worker (job/records.py's ``Merger``: a part taken whole stays records), so
    the merge while reading is given up and every input merged again after it."""
    folder = _synth(tmp_path, 4, 8, 13, 8)
    first = sorted(folder.iterdir())[0]
    (folder / ("z" + first.name)).write_bytes(first.read_bytes())  # read last, its ranks read before
    sources, plain, parts = _read_in_one_then_spied(folder, monkeypatch)
    taken = _taken(monkeypatch)
    early = analyze(sources, workers=2)
    assert parts == [True] * 3 + [False] and taken == [None]
    assert _json(early) == _json(plain) and len(early.records) == len(plain.records)
    assert all(r.occurrences == 2 for r in early.records if r.loc.file == str(first))


def test_a_small_input_naming_a_taken_parts_rank_is_merged_again(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """An input too small for a part of its own (merged mention by mention here) whose rank's records came built in
    an earlier input's part: those records cannot take its mentions, so every input is merged again after the read;
    one of other ranks merges here as before and the parts are taken."""
    folder = _synth(tmp_path, 4, 8, 13, 8)
    first = sorted(folder.iterdir())[0]
    rank3 = [line for line in first.read_text().splitlines(keepends=True) if line.startswith("[rank3]:")]
    assert rank3
    (folder / "z-rank3.log").write_text("".join(rank3))
    sources, plain, parts = _read_in_one_then_spied(folder, monkeypatch)
    taken = _taken(monkeypatch)
    early = analyze(sources, workers=2)
    assert parts == [True] * 3 and taken == [None]
    assert _json(early) == _json(plain)
    assert [r.occurrences for r in early.records if r.global_rank == 3] == [2]
    (folder / "z-rank3.log").write_text("".join(line.replace("[rank3]:", "[rank99]:") for line in rank3))
    sources, plain, parts = _read_in_one_then_spied(folder, monkeypatch)
    taken = _taken(monkeypatch)
    early = analyze(sources, workers=2)
    assert parts == [True] * 3 and taken == [len(plain.records)]
    assert _json(early) == _json(plain)


def test_an_input_of_few_mentions_is_merged_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of one rank holds two mentions: merged in the main process, its part's trip back would cost more."""
    folder = _synth(tmp_path, 4, 8, 13, 1)
    sources, plain, parts = _read_in_one_then_spied(folder, monkeypatch)
    assert _json(analyze(sources, workers=2)) == _json(plain)
    assert parts == []


def test_a_worker_of_few_mentions_never_imports_the_deciding_side(tmp_path: Path) -> None:
    """The deciding side (job/records.py and the job model under it) is imported by the main process while the
    workers read (job/analyze.py): a worker that reads no input of PART_MIN_MENTIONS mentions makes no part and
    imports none of it (each of 16 workers importing it cost 4 MB more memory on the chatty corpus)."""
    few, many = _synth(tmp_path / "few", 4, 8, 13, 1), _synth(tmp_path / "many", 4, 8, 13, 8)
    code = ("import sys; from ncclcheck.evidence.reader import resolve; from ncclcheck.evidence.scan import _scan_chunk;"
            " from ncclcheck.job.analyze import _file_part;"
            " parts = [p for _, p in _scan_chunk(resolve([sys.argv[1]], print), _file_part)];"
            " print(sum(p is not None for p in parts), 'ncclcheck.job.records' in sys.modules)")
    said = [subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, check=True,
                           timeout=120).stdout.split() for folder in (few, many)]
    assert said == [["0", "False"], ["3", "True"]]
