"""The Chrome trace: valid against the format's required fields, and the same collective lines up across ranks."""

from __future__ import annotations

import json
from collections import defaultdict
from numbers import Real

import pytest
from conftest import DATA, run

from ncclcheck.render.trace import UNIT_US, trace_json

REAL4 = DATA / "real4"
METADATA = {"process_name", "process_labels", "process_sort_index", "thread_name", "thread_sort_index"}


def validate(trace: dict) -> list[dict]:
    """The JSON object format: traceEvents, and in each event the fields its phase requires."""
    assert set(trace) <= {"traceEvents", "displayTimeUnit", "otherData", "stackFrames", "samples",
                          "systemTraceEvents", "controllerTraceDataKey"}
    assert trace["displayTimeUnit"] in ("ms", "ns")
    events = trace["traceEvents"]
    assert isinstance(events, list) and events
    for e in events:
        assert isinstance(e["name"], str) and e["name"], e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        assert e["ph"] in ("X", "M", "i"), e
        if e["ph"] == "M":
            assert e["name"] in METADATA and isinstance(e["args"], dict), e
            continue
        assert isinstance(e["ts"], Real) and e["ts"] >= 0 and isinstance(e["cat"], str), e
        if e["ph"] == "X":
            assert isinstance(e["dur"], Real) and e["dur"] > 0, e
        else:
            assert e["s"] in ("g", "p", "t"), e
        assert isinstance(e.get("args", {}), dict)
    # Every slice's process and thread are named, and slices of one thread never overlap.
    named = {(e["pid"], e["tid"]) for e in events if e["name"] == "thread_name"}
    procs = {e["pid"] for e in events if e["name"] == "process_name"}
    slices = [e for e in events if e["ph"] == "X"]
    by_thread = defaultdict(list)
    for e in slices:
        assert (e["pid"], e["tid"]) in named and e["pid"] in procs
        by_thread[(e["pid"], e["tid"])].append(e)
    for row in by_thread.values():
        row.sort(key=lambda e: e["ts"])
        for a, b in zip(row, row[1:], strict=False):
            assert a["ts"] + a["dur"] <= b["ts"], (a, b)
    json.loads(json.dumps(trace))
    return slices


def by_rank(slices: list[dict]) -> dict[int, list[tuple[str, str, str, int]]]:
    out = defaultdict(list)
    for e in sorted(slices, key=lambda e: (e["pid"], e["ts"])):
        out[e["pid"]].append((e["args"]["group"], e["name"], e["args"]["state"], e["ts"]))
    return out


@pytest.fixture(scope="module")
def straggler() -> dict:
    return trace_json(run(REAL4 / "tp_straggler"))


def test_straggler_trace_is_valid_and_names_ranks_and_groups(straggler):
    slices = validate(straggler)
    names = {(e["pid"], e["args"]["name"]) for e in straggler["traceEvents"] if e["name"] == "process_name"}
    assert names == {(r, f"rank {r}") for r in range(4)}
    threads = {e["args"]["name"] for e in straggler["traceEvents"] if e["name"] == "thread_name" and e["pid"] == 2}
    assert threads == {"PG 1 (tp, GUID 6e7899d9)", "PG 2 (dp, GUID 1f107ed8)"}
    labels = {e["pid"]: e["args"]["labels"] for e in straggler["traceEvents"] if e["name"] == "process_labels"}
    assert labels == {0: "waiting", 1: "waiting", 2: "waiting", 3: "culprit"}
    stuck = next(e for e in slices if e["pid"] == 2 and e["args"]["state"] == "stuck" and "tp" in e["args"]["group"])
    assert stuck["name"] == "allreduce #4" and stuck["cat"] == "collective"
    assert {k: stuck["args"][k] for k in ("op", "seq", "sizes", "dtypes", "numel_in", "source")} == {
        "op": "ALLREDUCE", "seq": 4, "sizes": [[4096]], "dtypes": ["Float"], "numel_in": 4096, "source": "dump"}
    assert stuck["args"]["frame"] == "mesh_step at /work/main/tools/incident_groups.py:62"
    assert stuck["args"]["evidence"].endswith("tp_straggler/attempt_0/2/stderr.log:3")
    assert "logical, not wall-clock" in straggler["otherData"]["clock"]
    assert straggler["otherData"]["verdict"] == "lagging_rank"


def test_straggler_collectives_line_up_and_the_culprit_leaves_a_gap(straggler):
    """Each step alternates tp then dp on every rank; rank 3 stops after #3, the others hang in #4."""
    ranks = by_rank(validate(straggler))
    steps = [(name, g.split(" (")[1].split(",")[0], ts // UNIT_US) for g, name, _, ts in ranks[0]]
    assert steps == [("allreduce #1", "tp", 0), ("allreduce #1", "dp", 1), ("allreduce #2", "tp", 2),
                     ("allreduce #2", "dp", 3), ("allreduce #3", "tp", 4), ("allreduce #3", "dp", 5),
                     ("allreduce #4", "tp", 6), ("allreduce #4", "dp", 7)]
    assert [(n, ts // UNIT_US) for _, n, _, ts in ranks[3]][-2:] == [("allreduce #3", 4), ("allreduce #3", 5)]
    assert [s for _, _, s, _ in ranks[0]][-2:] == ["completed", "stuck"]
    assert [s for _, _, s, _ in ranks[2]][-2:] == ["stuck", "stuck"]
    # Rank 0 and rank 2 share the dp group 1f107ed8: its #4 sits at one time on both.
    ts = {r: t for r in (0, 2) for g, n, _, t in ranks[r] if n == "allreduce #4" and "1f107ed8" in g}
    assert ts[0] == ts[2] == 7 * UNIT_US


def test_p2p_send_lines_up_with_its_receive():
    slices = validate(trace_json(run(REAL4 / "pp_recv")))
    sends = [e for e in slices if e["pid"] == 1 and e["name"] == "send 2"]
    recvs = [e for e in slices if e["pid"] == 2 and e["name"] == "recv 1"]
    assert len(sends) == 3 and len(recvs) == 4
    assert [e["ts"] for e in sends] == [e["ts"] for e in recvs[:3]]
    assert recvs[3]["args"]["state"] == "stuck" and recvs[3]["cat"] == "p2p" and recvs[3]["args"]["peer"] == 1


def test_logs_alone_give_the_last_works_from_the_counters():
    """Without dumps: the counters' last numbers, op unknown except for the work that timed out."""
    slices = validate(trace_json(run(REAL4 / "tp_straggler" / "console.log")))
    mine = sorted((e for e in slices if e["pid"] == 2 and e["args"]["group"].startswith("PG 1 ")), key=lambda e: e["ts"])
    assert [(e["name"], e["args"]["state"], e["args"]["source"]) for e in mine] == [
        ("collective #1", "completed", "counters"), ("collective #2", "completed", "counters"),
        ("collective #3", "completed", "counters"), ("allreduce #4", "stuck", "logs")]


def test_mismatched_orders_still_give_a_valid_trace():
    """uneven_ddp: ranks disagree on what #17 is; the layout must not loop or overlap."""
    slices = validate(trace_json(run(REAL4 / "uneven_ddp")))
    assert {e["pid"] for e in slices} == {0, 1, 2, 3}


INCIDENTS = sorted(p for base in (DATA / "real", REAL4) for p in base.iterdir() if p.is_dir())


@pytest.mark.parametrize("incident", INCIDENTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_real_incident_gives_a_valid_trace_and_page(incident):
    """Both renderers on every real incident: a valid trace, a well-formed page that names the verdict."""
    from test_report_html import parse

    from ncclcheck.render.html import report_html

    a = run(incident)
    slices = validate(trace_json(a))
    assert {e["args"]["state"] for e in slices} <= {"completed", "started", "scheduled", "stuck", "failed"}
    html = report_html(a)
    parse(html)
    assert f'<span class="kind">{a.verdict.kind.value}</span>' in html
    if a.verdict.culprit_ranks:
        assert '<details class="culprit">' in html
