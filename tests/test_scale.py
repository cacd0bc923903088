"""Large jobs: the folded JSON accounts for every item, and evidence files merge into the raw logs' answer.

The times and memory at 1,000-100,000 ranks are measured by tools/bench_scale.py (``make bench``), not here.
"""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import json
import re
from pathlib import Path

import pytest
from analysed import report
from conftest import DATA, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hangs import ALL_INPUTS
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.evidence import bundle
from ncclcheck.evidence.reader import resolve
from ncclcheck.evidence.types import InputProblem
from ncclcheck.job.analyze import analyze_scans, read_all
from ncclcheck.render.json_out import analysis_json

runner = CliRunner()
TOOLS = DATA.parent.parent / "tools"


def parse_ranks(text: str | None) -> set[int]:
    """The JSON's rank-set notation (``0-4, 6``, ``5-509 by 8``) back into ranks."""
    out: set[int] = set()
    for part in (text or "").split(", ") if text else ():
        m = re.fullmatch(r"(\d+)(?:-(\d+)(?: by (\d+))?)?", part)
        assert m, part
        lo, hi, step = int(m[1]), int(m[2] or m[1]), int(m[3] or 1)
        out |= set(range(lo, hi + 1, step))
    return out


def _synth(tmp_path: Path, tp: int, dp: int, straggler: int, per_file: int) -> Path:
    spec = importlib.util.spec_from_file_location("synth_job", TOOLS / "synth_job.py")
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    folder = tmp_path / "logs"
    synth.write_nodes(str(folder), tp, dp, straggler, 40, per_file)
    return folder


def test_rank_notation_round_trips():
    from ncclcheck.render.json_out import ranks_json

    for ranks in ([0, 1, 2, 5, 7, 8], list(range(0, 512, 8)) + [513, 600, 601], [3], list(range(100_000))):
        assert parse_ranks(ranks_json(ranks)) == set(ranks)
    assert ranks_json([]) is None


@pytest.mark.parametrize("path", ALL_INPUTS, ids=lambda p: p.split("tests/data/")[-1])
def test_classes_account_for_every_item(path):
    """Every per-rank record, rank and edge is in exactly one class, with the class's values: folding loses
    only whose an item is (and where), never what it says."""
    j = report(path, per_rank=True)  # analysis_json(run(path), per_rank=True), made once (tests/analysed.py)
    detail = j["per_rank"]

    def record_says(r):
        return (r["pg"] and (r["pg"]["id"], r["pg"]["desc"]), r["seq"], r["op_type"], r["numel_in"], r["numel_out"],
                r["timeout_ms"], r["last_enqueued"], r["last_completed"], tuple(r["evidence"]), r["occurrences"])

    assert sum(c["count"] for c in j["records"]) == len(detail["records"])
    items = {(r["global_rank"], record_says(r)) for r in detail["records"] if r["global_rank"] is not None}
    classes = {(rank, record_says(c)) for c in j["records"] for rank in parse_ranks(c["ranks"])}
    assert items <= classes
    for c in j["records"]:
        spans = [r["ran_for_ms"] for r in detail["records"] if record_says(r) == record_says(c)
                 and r["ran_for_ms"] is not None]
        assert c["ran_for_ms"] == ([min(spans), max(spans)] if spans else None)

    assert sum(c["count"] for c in j["job"]["ranks"]) == len(detail["ranks"])
    ending = {s["rank"]: (s["ending"]["kind"], s["ending"]["detail"]) for s in detail["ranks"]}
    folded = {r: (c["ending"]["kind"], c["ending"]["detail"]) for c in j["job"]["ranks"] for r in parse_ranks(c["ranks"])}
    assert folded == ending

    assert sum(c["count"] for c in j["job"]["edges"]) == len(detail["edges"])
    for c in j["job"]["edges"]:
        mine = [e for e in detail["edges"] if e["waiter"] in parse_ranks(c["waiters"]) and e["reason"] == c["reason"]
                and e["work"]["seq"] == c["work"]["seq"] and e["work"]["op"] == c["work"]["op"]]
        assert {e["target"] for e in mine if e["target"] is not None} == parse_ranks(c["targets"])

    members = {r for g in detail["groups"] for r in g["members"]}
    assert {r for c in j["job"]["groups"] for r in parse_ranks(c["members"])} == members
    assert sum(c["groups"] for c in j["job"]["groups"]) == len(detail["groups"])
    for name, items in detail["events"].items():
        assert sum(c["count"] for c in j["events"][name]) == len(items), name


def test_a_large_job_folds_into_a_few_classes(tmp_path):
    """4,096 ranks: a few classes of each kind and under 200 bytes a rank, with the whole detail behind --per-rank."""
    folder = _synth(tmp_path, 8, 512, 517, 256)
    r = runner.invoke(app, ["analyze-log", "--json", str(folder)], catch_exceptions=False)
    assert r.exit_code == 1
    j = json.loads(r.stdout)
    assert len(r.stdout) <= 200 * 4096
    assert j["verdict"]["culprit_ranks"] == [517] and j["job"]["roots"] == [517]
    assert [(c["ranks"], c["count"], c["pg"]["id"], c["groups"], c["numel_in"]) for c in j["records"]] == [
        ("0-511, 520-4095", 4088, "2", 8, 25_165_824), ("512-516, 518-519", 7, "1", 1, 4096)]
    assert [(c["id"], c["groups"], c["size"], c["members"]) for c in j["job"]["groups"]] == [
        ("2", 8, 512, "0-4095"), ("1", 512, 8, "0-4095"), ("0", 1, 4096, "0-4095")]
    assert sorted((c["reason"], c["targets"], c["work"]["group"]["id"]) for c in j["job"]["edges"]) == [
        ("blocked_elsewhere", "512-516, 518-519", "2"), ("not_reached", "517", "1"), ("not_reached", "517", "2")]
    direct = {c["work"]["group"]["id"]: c["waiters"] for c in j["job"]["edges"] if c["reason"] == "not_reached"}
    assert direct == {"2": "5-509 by 8, 525-4093 by 8", "1": "512-516, 518-519"}
    blocked = next(c for c in j["job"]["edges"] if c["reason"] == "blocked_elsewhere")
    assert parse_ranks(blocked["waiters"]) == set(range(4096)) - set(range(5, 512, 8)) - set(range(512, 520)) - set(
        range(525, 4096, 8)) and parse_ranks(blocked["targets"]) == {512, 513, 514, 515, 516, 518, 519}
    assert {c["key"]: c["count"] for c in j["events"]["facts"]} == {"TIMEOUT(ms)": 4096, "world_size": 4096}
    assert j["per_rank"] is None and j["inputs"]["files"] == 16 and j["inputs"]["ranks_seen"] == "0-4095"


def test_evidence_files_merge_into_the_same_answer(tmp_path, monkeypatch):
    """Four nodes reduce their logs (two gzip, two plain); the merge gives the raw logs' JSON, byte for byte."""
    monkeypatch.chdir(tmp_path)
    _synth(tmp_path, 8, 32, 77, 32)
    logs = sorted(p.name for p in (tmp_path / "logs").iterdir())
    (tmp_path / "ev").mkdir()
    for node in range(4):
        out = f"ev/node-{node}.json" + (".gz" if node % 2 else "")
        r = runner.invoke(app, ["analyze-log", "--evidence-out", out, *(f"logs/{n}" for n in logs[node::4])])
        assert (r.exit_code, r.stdout) == (0, "")
        assert r.stderr.splitlines() == [f"ncclcheck: wrote {out}", "ncclcheck: evidence of 2 input(s), 64 rank(s)"]
    assert gzip.decompress((tmp_path / "ev" / "node-1.json.gz").read_bytes()).startswith(bundle.MAGIC)
    for extra in ([], ["--per-rank"]):
        raw = runner.invoke(app, ["analyze-log", "--json", *extra, "logs"], catch_exceptions=False)
        merged = runner.invoke(app, ["analyze-log", "--json", *extra, "ev"], catch_exceptions=False)
        assert raw.exit_code == merged.exit_code == 1
        assert merged.stdout == raw.stdout
    assert json.loads(merged.stdout)["verdict"]["culprit_ranks"] == [77]


@pytest.mark.parametrize("scenario", ["tp_straggler", "killed", "pp_recv", "uneven_fsdp"])
def test_real_logs_and_dumps_as_evidence(scenario, tmp_path, monkeypatch):
    """A real 4-GPU incident (per-rank logs and flight-recorder dumps) through an evidence file: the same JSON."""
    monkeypatch.chdir(DATA / "real4")
    out = tmp_path / "node.json.gz"
    r = runner.invoke(app, ["analyze-log", "--evidence-out", str(out), scenario])
    assert r.exit_code == 0
    raw = runner.invoke(app, ["analyze-log", "--json", "--per-rank", scenario])
    merged = runner.invoke(app, ["analyze-log", "--json", "--per-rank", str(out)])
    assert merged.stdout == raw.stdout and merged.exit_code == raw.exit_code


def test_every_scan_survives_the_evidence_format(tmp_path):
    """read(write(scans)) == scans for every real input: logs, dumps, snapshots, every event kind."""
    out = tmp_path / "e.json"
    problems = [InputProblem("gone.log", "permission denied", True)]
    for path in [*ALL_INPUTS, *map(str, (DATA / "snapshot").glob("*.tar.gz"))]:
        scans, _ = read_all(resolve([path], print), workers=1)
        out.write_bytes(bundle.dumps(scans, problems, compress=False))
        assert bundle.read(str(out)) == (scans, problems), path


def test_a_bad_evidence_file_is_one_line_and_the_rest_is_read(tmp_path):
    good = tmp_path / "good.json"
    runner.invoke(app, ["analyze-log", "--evidence-out", str(good), str(DATA / "real" / "sleep" / "attempt_0")])
    newer, now = bundle.FORMAT + 1, bundle.FORMAT
    (tmp_path / "newer.json").write_text(f'{{"ncclcheck_evidence": {newer}, "version": "9.0", "scans": []}}')
    (tmp_path / "cut.json.gz").write_bytes(gzip.compress(good.read_bytes())[:200])
    (tmp_path / "odd.json").write_text(f'{{"ncclcheck_evidence": {now}, "version": "x", "problems": [], "scans": [[1, 2]]}}')
    (tmp_path / "config.json").write_text('{"hidden_size": 3584}')  # not evidence: read as a log that says nothing
    r = runner.invoke(app, ["analyze-log", "--json", str(tmp_path)])
    assert r.exit_code == 1
    j = json.loads(r.stdout)
    assert j["verdict"]["culprit_ranks"] == [1]
    problems = {Path(p["file"]).name: p["message"] for p in j["problems"]}
    assert problems["newer.json"] == f"evidence format {newer} is not {now}: written by ncclcheck 9.0, read by " + (
        __import__("ncclcheck").__version__)
    assert problems["cut.json.gz"].startswith("not a readable evidence file")
    assert problems["odd.json"].startswith(f"does not fit evidence format {now}")
    assert problems["config.json"].startswith("read, but holds nothing ncclcheck reads")  # said, not fatal
    for name in ("newer.json", "cut.json.gz", "odd.json"):
        (line,) = [x for x in r.stderr.splitlines() if name in x]
        assert line.startswith("ncclcheck: ") and "Traceback" not in r.stderr


def test_evidence_out_takes_no_report_options(tmp_path):
    for extra in (["--json"], ["--html", str(tmp_path / "r.html")], ["-q"]):
        r = runner.invoke(app, ["analyze-log", "--evidence-out", str(tmp_path / "e.json"), *extra,
                                str(DATA / "real" / "sleep")])
        assert r.exit_code == 2 and r.stderr.startswith("ncclcheck: error: --evidence-out writes the evidence only")
    r = runner.invoke(app, ["analyze-log", "--per-rank", str(DATA / "real" / "sleep")])
    assert (r.exit_code, r.stderr) == (2, "ncclcheck: error: --per-rank adds detail to --json; give both\n")
    r = runner.invoke(app, ["analyze-log", "--evidence-out", str(tmp_path / "e.json"), str(tmp_path / "none.log")])
    assert r.exit_code == 3 and not (tmp_path / "e.json").exists()


def test_logs_of_some_nodes_of_a_large_job(tmp_path):
    """1,000 ranks' logs of a 16,384-rank job, all waiting in the world group: one edge per waiter (not one per
    missing rank, which was 15 million edges), and the missing ranks named as unknown, not guilty."""
    lines = []
    for r in (r for r in range(1000) if r != 517):
        head = f"[rank{r}]:[E1122 10:30:00.0 ProcessGroupNCCL.cpp:689]"
        lines += [f"[rank{r}]:[I1122 10:00:00.0 ProcessGroupNCCL.cpp:988] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
                  f"ProcessGroupNCCL initialization options: size: 16384, global rank: {r}, TIMEOUT(ms): 600000",
                  f"{head} [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, "
                  "OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600012 milliseconds "
                  "before timing out.",
                  f"{head} [PG ID 0 PG GUID 0(default_pg) Rank {r}]  failure detected by watchdog at work sequence id: "
                  "5 PG status: last enqueued work: 5, last completed work: 4"]
    log = tmp_path / "console.log"
    log.write_text("\n".join(lines) + "\n")
    a = run(log)
    assert a.verdict.kind.value == "incomplete_evidence" and a.verdict.culprit_ranks == ()
    assert "(ranks 517, 1000-16383). They are unknown, not guilty" in a.verdict.summary
    assert len(a.job.edges) == 999 and {e.target for e in a.job.edges} == {None}
    assert a.verdict.chain[0] == ("ranks 0-516, 518-999 wait in PG 0 (default) #5 (allreduce of 4,096 elements) for "
                                  "members without input: no input from ranks 517, 1000-16383.")


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                     max_leaves=40)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scans=st.lists(_JSON, max_size=3), problems=_JSON)
def test_any_json_in_an_evidence_file_is_read_or_refused(scans, problems, tmp_path):
    """An evidence file that does not fit the format is one BundleError, never another exception."""
    out = tmp_path / "e.json"
    out.write_text(json.dumps({"ncclcheck_evidence": bundle.FORMAT, "version": "x", "problems": problems, "scans": scans}))
    with contextlib.suppress(bundle.BundleError):
        bundle.read(str(out))


_REAL = json.loads(bundle.dumps(read_all(resolve([str(DATA / "real4" / "tp_straggler")], print), workers=1)[0], [],
                                compress=False))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_damaged_real_evidence_file_is_read_or_refused(data, tmp_path):
    """Real evidence (logs and dumps of a 4-GPU incident) with one value anywhere replaced: read, or one BundleError."""
    doc = json.loads(json.dumps(_REAL))
    node = doc["scans"]
    while isinstance(node, list | dict) and node:
        keys = list(range(len(node))) if isinstance(node, list) else list(node)
        key = data.draw(st.sampled_from(keys))
        if not isinstance(node[key], list | dict) or not node[key] or data.draw(st.booleans()):
            node[key] = data.draw(_JSON)
            break
        node = node[key]
    out = tmp_path / "e.json"
    out.write_text(json.dumps(doc))
    try:
        scans, problems = bundle.read(str(out))
    except bundle.BundleError:
        return
    json.dumps(analysis_json(analyze_scans(scans, problems=problems), per_rank=True))  # and it is analysed


def test_evidence_and_archives_are_known_by_content_whatever_their_name(tmp_path):
    """An evidence file named node0.ev, a .json.gz renamed .gz, a snapshot archive renamed .bin: each is read as what
    it is, not as a text log that says nothing."""
    import shutil

    good = tmp_path / "node0.json.gz"
    runner.invoke(app, ["analyze-log", "--evidence-out", str(good), str(DATA / "real" / "sleep" / "attempt_0")])
    for name in ("node0.ev", "node0.gz"):
        shutil.copy(good, tmp_path / name)
        j = json.loads(runner.invoke(app, ["analyze-log", "--json", str(tmp_path / name)]).stdout)
        assert j["verdict"]["culprit_ranks"] == [1] and j["problems"] == [], name
    archive = tmp_path / "snap.bin"
    shutil.copy(DATA / "snapshot" / "h200x4" / "snapshot-nccl.tar.gz", archive)
    j = json.loads(runner.invoke(app, ["analyze-log", "--json", str(archive)]).stdout)
    assert j["verdict"]["culprit_ranks"] == [3]


def test_a_stack_without_frames_from_a_damaged_evidence_file_is_left_out():
    """Hypothesis found it: an evidence file can carry a collective's stack with no frames."""
    from ncclcheck.evidence.types import CollectiveStack, FileScan, Loc, Who
    from ncclcheck.job.build import build_job
    from ncclcheck.job.findings import report_findings

    scan = FileScan("node-0.json.gz", None, 1, 10, (0,), stacks=(CollectiveStack(Who(0, None), (), Loc("x.log", 3)),))
    assert not [f for f in report_findings(build_job([scan], [])) if f.code == "collective-stack"]
