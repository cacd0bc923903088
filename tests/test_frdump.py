"""Flight-recorder dumps: real ones from 2xH200, hostile and damaged ones, older and JSON variants."""

from __future__ import annotations

import json
import os
import pickle
import shutil

import pytest
from conftest import REAL, run
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.evidence.frdump import DumpError, parse_dump

runner = CliRunner()


@pytest.mark.parametrize(
    ("scenario", "kind", "culprits", "seq", "culprit_line"),
    [
        ("sleep", "lagging_rank", (1,), 4, 41),  # rank 1's last recorded collective: all_reduce #3 at line 41
        ("mismatch", "collective_mismatch", (1,), 4, 36),
        ("uneven", "collective_mismatch", (1,), 5, 44),
        ("barrier", "collective_mismatch", (0,), 4, 40),
    ],
)
def test_real_dumps_alone(scenario, kind, culprits, seq, culprit_line):
    """Dumps without any text log give the verdict and the culprit's line of code."""
    a = run(REAL / scenario / "dumps")
    v = a.verdict
    assert (v.kind.value, v.culprit_ranks, v.seq) == (kind, culprits, seq)
    works = [w for p in a.job.rank(culprits[0]).positions for w in p.works]
    at_seq = [w for w in works if w.seq == seq and not w.p2p]
    frame = (at_seq or sorted(works, key=lambda w: w.order))[-1].frame
    assert frame.file.endswith("tools/incident.py")
    assert frame.line == culprit_line


def test_text_and_dumps_together():
    """Given both, the verdict stands and the dumps add exact members and frames to the job model."""
    a = run(REAL / "barrier")
    assert a.verdict.kind.value == "collective_mismatch" and a.verdict.culprit_ranks == (0,)
    default = next(g for g in a.job.groups if g.id.guid == "0")
    assert (default.members, default.source.value) == ((0, 1), "pg_config")
    assert {p.source for s in a.job.ranks for p in s.positions} == {"dump"}


def _dump(tmp_path, name="nccl_trace_rank_0"):
    src = REAL / "sleep" / "dumps" / name
    dst = tmp_path / name
    shutil.copy(src, dst)
    return dst


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_pickle_is_refused_and_never_run(tmp_path):
    """A dump whose pickle would run a command is refused with a clear error; the command never runs."""
    marker = tmp_path / "pwned"
    evil = tmp_path / "nccl_trace_rank_1"
    evil.write_bytes(pickle.dumps({"version": "2.10", "entries": [_Evil(marker)]}))
    good = _dump(tmp_path)
    r = runner.invoke(app, ["analyze-log", str(evil), str(good), "--json", "--per-rank"], catch_exceptions=False)
    assert not marker.exists()
    assert f"ncclcheck: {evil}: refuses to load posix.system" in r.stderr
    assert r.stderr.count("\n") == 1
    assert json.loads(r.stdout)["per_rank"]["dumps"][0]["rank"] == 0


def test_truncated_dump_is_a_per_file_error(tmp_path):
    bad = tmp_path / "nccl_trace_rank_1"
    bad.write_bytes((REAL / "sleep" / "dumps" / "nccl_trace_rank_1").read_bytes()[:700])
    good = _dump(tmp_path)
    r = runner.invoke(app, ["analyze-log", str(bad), str(good), "--json", "--per-rank"], catch_exceptions=False)
    assert f"ncclcheck: {bad}: corrupt or truncated dump" in r.stderr
    j = json.loads(r.stdout)
    assert [d["rank"] for d in j["per_rank"]["dumps"]] == [0]


def test_missing_dump_is_reported_not_fatal(tmp_path):
    """One rank's dump of a two-rank group: rank 1 is named as missing; the trail ends at it, so it is the rank the
    summary names to look at, in the unknown set (one set each, issue 41 §4: unknown, not guilty, job/absent.py),
    its ending unknown, and the summary says it left nothing."""
    a = run(_dump(tmp_path))
    assert any(f.code == "fr-missing-dumps" and "rank 1" in f.message for f in a.verdict.findings)
    assert a.job.rank(1).ending.kind.value == "unknown"
    assert (a.verdict.culprit_ranks, a.verdict.unknown_ranks) == ((), (1,))
    assert "left nothing in these inputs" in a.verdict.summary


def test_json_dump(tmp_path):
    """PyTorch can write the same dict as JSON; it is read the same way."""
    for r in (0, 1):
        data = pickle.loads((REAL / "mismatch" / "dumps" / f"nccl_trace_rank_{r}").read_bytes())
        (tmp_path / f"nccl_trace_rank_{r}.json").write_text(json.dumps(data))
    v = run(tmp_path).verdict
    assert (v.kind.value, v.culprit_ranks, v.seq) == ("collective_mismatch", (1,), 4)


def test_older_layout_seq_id_without_status(tmp_path):
    """Older releases: 'seq_id' instead of 'collective_seq_id', no pg_status, no is_p2p."""
    def entry(seq, op, state, size):
        return {"record_id": seq, "pg_id": 0, "process_group": ["0", "default_pg"], "seq_id": seq,
                "profiling_name": f"nccl:{op}", "input_sizes": [[size]], "output_sizes": [[size]],
                "input_dtypes": ["Float"], "state": state, "frames": [{"name": "train", "filename": "t.py", "line": seq}]}
    base = [entry(1, "all_reduce", "completed", 8), entry(2, "all_reduce", "completed", 8)]
    for r, extra in ((0, [entry(3, "all_reduce", "scheduled", 8)]), (1, [])):
        (tmp_path / f"trace_{r}").write_bytes(pickle.dumps({"version": "1.5", "entries": base + extra,
                                                            "pg_config": {"0": {"ranks": [0, 1]}}}, protocol=2))
    a = run(tmp_path)
    assert (a.verdict.kind.value, a.verdict.culprit_ranks, a.verdict.seq) == ("lagging_rank", (1,), 3)


def test_not_a_dump():
    with pytest.raises(DumpError, match="not a flight-recorder dump"):
        parse_dump(pickle.dumps([1, 2, 3]), "x")


def _entry_210(seq, p2p_seq, name, state, size, **extra):
    """One entry as format 2.10 writes it (torch 2.9+), thread and timing fields included."""
    return {"frames": [{"name": "step", "filename": "/work/train.py", "line": 10 + p2p_seq + seq}],
            "record_id": seq + p2p_seq, "pg_id": 0, "process_group": ["0", "default_pg"], "thread_name": "python",
            "thread_id": "139652544545088", "collective_seq_id": seq, "p2p_seq_id": p2p_seq, "op_id": seq + p2p_seq,
            "profiling_name": name, "time_created_ns": 1795324193322036629, "input_sizes": [[size]],
            "input_dtypes": ["Float"], "output_sizes": [[size]], "output_dtypes": ["Float"], "state": state,
            "time_discovered_started_ns": None, "time_discovered_completed_ns": None, "retired": False,
            "timeout_ms": 10000, "is_p2p": name.startswith(("nccl:send", "nccl:recv")), **extra}


def test_format_2_10_fields_and_p2p_peers(tmp_path):
    """2.10: comm_lib_version, thread id/name, duration; send/recv entries name their peer (a group rank)."""
    dump = {"version": "2.10", "comm_lib_version": "2.28.9",
            "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
            "pg_status": {"0": {"last_enqueued_collective": "2", "last_started_collective": -1,
                                "last_completed_collective": 1}},
            "entries": [_entry_210(1, 0, "nccl:all_reduce", "completed", 8, duration_ms=0.25),
                        _entry_210(0, 1, "nccl:send 0->1", "completed", 7),
                        _entry_210(0, 2, "nccl:recv 0<-1", "completed", 7),
                        _entry_210(2, 2, "nccl:all_reduce", "scheduled", 8)]}
    path = tmp_path / "comm_lib_trace_rank_0"
    path.write_text(json.dumps(dump))
    d = parse_dump(path.read_bytes(), path.name)
    assert (d.rank, d.version, d.comm_lib_version) == (0, "2.10", "2.28.9")
    assert d.pg_status["0"] == {"last_enqueued_collective": 2, "last_started_collective": -1,
                                "last_completed_collective": 1}
    first, send, recv, _ = d.entries
    assert (first.thread_id, first.thread_name, first.duration_ms, first.peer) == (
        "139652544545088", "python", 0.25, None)
    assert (send.is_p2p, send.peer, send.p2p_seq, send.seq) == (True, 1, 1, 0)
    assert (recv.peer, recv.p2p_seq) == (1, 2)
