"""Inputs that are not logs (evidence/packed.py), told in the worker processes that read the job and read here: the
same scans, in the same order, with the same problems, as read in one process."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from test_scale import DATA, _synth

from ncclcheck.evidence import bundle
from ncclcheck.evidence.reader import resolve
from ncclcheck.job.analyze import read_all


def _mixed(tmp_path: Path) -> Path:
    """Node logs, two of them reduced to evidence files (one gzipped), a damaged evidence file, a snapshot archive
    and a debug server's stacks dumps, in one folder."""
    logs = _synth(tmp_path, 4, 8, 13, 4)
    folder = tmp_path / "mixed"
    folder.mkdir()
    for i, log in enumerate(sorted(logs.iterdir())):
        if i < 2:
            scans, problems = read_all(resolve([str(log)], print), workers=1)
            data = bundle.dumps(scans, problems, compress=bool(i))
            (folder / f"{log.name}.json{'.gz' if i else ''}").write_bytes(data)
        else:
            shutil.copy(log, folder / log.name)
    (folder / "cut.json.gz").write_bytes(gzip.compress((folder / f"{sorted(logs.iterdir())[0].name}.json")
                                                       .read_bytes())[:200])
    archive = DATA / "snapshot" / "gloo_cycle" / "snapshot.tar.gz"
    shutil.copy(archive, folder / archive.name)
    for stacks in (DATA / "gpu" / "nccl232" / "hang" / "debug").glob("stacks_*.txt"):
        shutil.copy(stacks, folder / stacks.name)
    return folder


def test_told_in_the_workers_as_in_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sources = resolve([str(_mixed(tmp_path))], print)
    alone, alone_problems = read_all(sources, workers=1)
    monkeypatch.setattr("ncclcheck.evidence.scan.PARALLEL_MIN_FILES", 2)
    done: list[str] = []
    workers, problems = read_all(sources, lambda s: done.append(s.file), workers=2)
    assert workers == alone and problems == alone_problems
    assert sorted(done) == sorted(s.file for s in alone)  # each scan reported once, unpacked ones too
    kinds = {s.file.rsplit(".", 1)[-1] for s in alone}
    assert {"log", "txt"} <= kinds and any(s.dump is not None or s.live for s in alone)
    assert sum(1 for s in alone if s.problems and s.problems[0].fatal) == 1  # the damaged evidence file
