"""A scan crosses from a worker pickled as its objects' constructors' arguments (evidence/crossing.py): the same
objects come back, and their pickle names no field, so unpickling went through the constructor."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from ncclcheck.evidence.reader import resolve
from ncclcheck.evidence.scan import scan_source
from ncclcheck.job.records import file_part

DATA = Path(__file__).parent / "data"
INPUTS = sorted(p for p in (DATA / "real").rglob("*") if p.is_file())[:12] + \
    sorted(p for p in (DATA / "frdump").rglob("*") if p.is_file())[:4]


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.relative_to(DATA).as_posix())
def test_a_scan_crosses_whole_and_by_its_constructors(path: Path) -> None:
    (source,) = resolve([str(path)], lambda _: None)
    scan = scan_source(source)
    data = pickle.dumps(scan, protocol=pickle.HIGHEST_PROTOCOL)
    assert pickle.loads(data) == scan
    for name in ("bytes_read", "ranks_seen", "dump_signals", "group_inits"):
        assert name.encode() not in data  # a field dict would name them


def test_a_records_part_crosses_whole(tmp_path: Path) -> None:
    log = tmp_path / "node.log"
    log.write_text("".join(
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600010 "
        "milliseconds before timing out.\n" for r in range(20)))
    (source,) = resolve([str(log)], lambda _: None)
    part = file_part(scan_source(source))
    assert part is not None and len(part.records) == 20
    data = pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
    back = pickle.loads(data)
    assert back == part and [r.global_rank for r in back.records] == list(range(20))
    assert b"last_enqueued" not in data  # the records cross as their constructors' arguments, not field dicts
