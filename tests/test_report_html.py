"""The HTML incident report: what it shows for real incidents, at 1,024 ranks, and with hostile input."""

from __future__ import annotations

import importlib.util
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import DATA, run
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.render.html import report_html

REAL4 = DATA / "real4"
runner = CliRunner()


class _Page(HTMLParser):
    """Tags, ids and internal links of a page; fails on an end tag that closes nothing open."""

    VOID = {"meta", "input", "br", "img", "link"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.ids: list[str] = []
        self.hrefs: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        if "href" in a:
            self.hrefs.append(a["href"])
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()


def parse(html: str) -> _Page:
    p = _Page()
    p.feed(html)
    p.close()
    assert p.stack == [], p.stack
    return p


def rows(html: str) -> list[tuple[str, str, list[str], list[str]]]:
    """(class, who, cell states, cell labels) of every timeline row, top to bottom."""
    out = []
    for chunk in html.split('<details class="')[1:]:
        cls = chunk.split('"', 1)[0]
        who = re.search(r'<div class="who"[^>]*><b>([^<]*)</b>', chunk)[1]
        summary = chunk.split("</summary>", 1)[0]
        cells = re.findall(r'<div class="c s-([a-z_]+)"[^>]*>([^<]*)</div>', summary)
        out.append((cls, who, [c[0] for c in cells], [c[1] for c in cells]))
    return out


def lanes(html: str) -> list[str]:
    return re.findall(r'<div class="lane span-\d+"[^>]*>([^<]*)</div>', html)


@pytest.fixture(scope="module")
def straggler() -> str:
    return report_html(run(REAL4 / "tp_straggler"))


def test_straggler_report_names_the_verdict_and_the_culprit_first(straggler):
    parse(straggler)
    assert '<span class="kind">lagging_rank</span>' in straggler
    assert '<dt>culprit</dt><dd class="culprit">3</dd>' in straggler
    assert lanes(straggler) == ["PG 1 (tp)", "PG 2 (dp)"]  # the default group ran nothing: no lane
    r = rows(straggler)
    assert [(c, w) for c, w, *_ in r] == [("culprit", "rank 3"), ("waiting", "rank 0"), ("waiting", "rank 1"),
                                          ("waiting", "rank 2")]
    # Columns #1-#4 of tp, then of dp, each from the rank's dump.
    done = ["completed"] * 3
    assert r[0][2] == done + ["not_issued"] + done + ["not_issued"]  # rank 3 never issued #4 anywhere
    assert r[1][2] == done + ["completed"] + done + ["stuck"]  # rank 0 finished tp, hangs in dp
    assert r[3][2] == done + ["stuck"] + done + ["stuck"]  # rank 2 timed out in both
    assert r[3][3] == ["AR"] * 8
    assert '<div class="waits">rank 3</div></summary>' in straggler.split('<details class="waiting">')[2]
    assert '<div class="waits">no one (the root)</div>' in straggler.split('<details class="culprit">')[1]


def test_straggler_report_links_every_claim_to_an_evidence_line(straggler):
    page = parse(straggler)
    refs = {h[1:] for h in page.hrefs if h.startswith("#ev-")}
    evidence = [i for i in page.ids if i.startswith("ev-")]
    assert refs == set(evidence) and len(evidence) == len(set(evidence)) >= 5
    root = f"{DATA.parent.parent}/"
    items = {k: v.removeprefix(root) for k, v in re.findall(r'<li id="(ev-\d+)">([^<]*)</li>', straggler)}
    verdict = straggler.split('id="verdict"', 1)[1].split("</section>", 1)[0]
    cited = [items[h] for h in re.findall(r'href="#(ev-\d+)"', verdict)]
    assert cited == ["tests/data/real4/tp_straggler/console.log:122",  # rank 3 stopped by SIGTERM
                     "tests/data/real4/tp_straggler/attempt_0/0/stderr.log:1",
                     "tests/data/real4/tp_straggler/attempt_0/1/stderr.log:1",
                     "tests/data/real4/tp_straggler/attempt_0/2/stderr.log:3"]
    chain = straggler.split('id="chain"', 1)[1].split("</section>", 1)[0]
    first = chain.split("</li>", 1)[0]
    assert "rank 0 waits in PG 2 (dp, GUID 1f107ed8) #4" in first
    assert [items[h] for h in re.findall(r'href="#(ev-\d+)"', first)] == [
        "tests/data/real4/tp_straggler/attempt_0/0/stderr.log:1"]
    assert '<li class="root">rank 3 printed no timeout or error' in chain
    codes = re.findall(r'<span class="code">([^<]*)</span>', straggler)
    assert codes == ["size-not-the-cause", "first-detector", "collective-stack", "root-cause-caveat"]  # and the verdict
    assert "capture flight-recorder dumps" not in straggler  # every rank's dump was read: no advice to take them
    demo = report_html(run(Path(__file__).parent.parent / "examples" / "incident-8rank"))
    assert '<pre class="cmd">export TORCH_FR_BUFFER_SIZE=2000 ' in demo  # to paste, never wrapped


def test_report_is_self_contained(straggler):
    """No network: nothing to fetch, and a policy that forbids fetching; style and script pinned by hash."""
    page = parse(straggler)
    assert not {"img", "link", "iframe", "object", "embed"} & set(page.tags)
    assert page.tags.count("script") == 1 and page.tags.count("style") == 1
    assert not re.search(r"(src|href)=\"(?!#)", straggler)
    assert "url(" not in straggler and "@import" not in straggler
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', straggler)[1]
    assert csp.startswith("default-src 'none'; style-src 'sha256-") and "script-src 'sha256-" in csp


def hostile(folder: Path) -> Path:
    """Two ranks' dumps and a log whose group description, frame, file names and error carry markup."""
    def entry(seq: int, state: str) -> dict:
        return {"collective_seq_id": seq, "profiling_name": "nccl:all_reduce", "pg_id": 1, "record_id": seq,
                "process_group": ["7", "<script>alert(1)</script>"], "input_sizes": [[1024]],
                "output_sizes": [[1024]], "input_dtypes": ["Float"], "state": state, "timeout_ms": 600000,
                "frames": [{"name": "<img src=x onerror=alert(2)>", "filename": '/x/"onmouseover="alert(3).py',
                            "line": 7}]}
    folder.mkdir(parents=True, exist_ok=True)
    for rank, entries in ((0, [entry(1, "completed"), entry(2, "scheduled")]), (1, [entry(1, "completed")])):
        dump = {"version": "2.10", "rank": rank, "pg_config": {"7": {"ranks": [0, 1], "desc": "<script>alert(1)</script>"}},
                "pg_status": {}, "entries": entries}
        (folder / f"evil<b>_{rank}").write_text(json.dumps(dump))
    (folder / "rank1.log").write_text("[rank1]:RuntimeError: <script>document.title='pwned'</script>\n")
    return folder


def test_hostile_strings_from_the_inputs_are_escaped(tmp_path):
    """A group description, a frame, a file name and an error message carrying markup come out as text."""
    html = report_html(run(hostile(tmp_path / "in")))
    page = parse(html)
    assert page.tags.count("script") == 1 and "img" not in page.tags
    assert "<script>alert" not in html and "<img" not in html and '"onmouseover' not in html and "<b>_" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "onerror=alert(2)" in html
    assert "evil&lt;b&gt;_0" in html and "&lt;script&gt;document.title=&#x27;pwned&#x27;" in html


def _synth(tmp_path: Path, tp: int, dp: int, straggler: int) -> Path:
    spec = importlib.util.spec_from_file_location("synth_job", DATA.parent.parent / "tools" / "synth_job.py")
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    out = tmp_path / "job.log"
    synth.write(str(out), tp, dp, straggler, 40)
    return out


def test_1024_ranks_fold_into_a_few_rows(tmp_path):
    """tp=8 x dp=128 with one straggler: ten rows, the straggler first; every rank still findable."""
    html = report_html(run(_synth(tmp_path, 8, 128, 517)))
    page = parse(html)
    r = rows(html)
    assert len(r) == 10
    assert (r[0][0], r[0][1]) == ("culprit", "rank 517")
    assert set(r[0][2]) == {"silent"}  # its log was read (its init lines) and says nothing of these: not guessed
    assert r[-1][1] == "ranks 512-516, 518-519"  # its tp peers, stuck in tp #41
    assert lanes(html) == ["PG 1", "PG 2"] and len(r[-1][2]) == 12  # #36-#41 of each
    assert r[-1][2][5] == "stuck" and r[-1][3][5] == "AR" and set(r[-1][2][6:]) == {"silent"}
    assert r[6][1] == "ranks 5-509 by 8, 525-1021 by 8"  # the straggler's own dp group, waiting for it directly
    assert '<div class="waits">rank 517</div>' in html.split('<details class="')[7]
    assert '<li id="rank-5">rank 5: timed out (timed out in allreduce of 25,165,824 elements #41); waits for rank 517' in html
    assert sorted(int(i[5:]) for i in page.ids if i.startswith("rank-")) == list(range(1024))
    assert len(html) < 600_000


def test_mismatch_shows_each_side_of_the_number(tmp_path):
    """uneven_fsdp: rank 3's all_reduce against the others' all_gather at #33, and the works queued behind."""
    html = report_html(run(REAL4 / "uneven_fsdp"))
    r = rows(html)
    assert [w for _, w, *_ in r] == ["rank 3", "ranks 0-2"]
    assert r[0][3][:2] == ["RS", "AR"] and r[0][2][:3] == ["completed", "stuck", "not_issued"]
    assert r[1][3][:3] == ["RS", "AG", "AG"] and r[1][2][:3] == ["completed", "stuck", "scheduled"]


def test_p2p_lane_shows_the_pending_receive():
    html = report_html(run(REAL4 / "pp_recv"))
    assert lanes(html)[0] == "PG 0 (default) p2p"
    r = {w: (states, labels) for _, w, states, labels in rows(html)}
    states, labels = r["rank 2"]
    assert labels[4:6] == ["recv 1", "send 3"] and states[4:6] == ["stuck", "scheduled"]


def test_logs_alone_fill_the_timeline_from_the_counters():
    """Without dumps: the timeout's counters (last enqueued 4, last completed 3) and the stuck work."""
    html = report_html(run(REAL4 / "tp_straggler" / "console.log"))
    assert "States from log counters." in html
    r = {w: states for _, w, states, _ in rows(html)}
    assert r["rank 2"][-2:] == ["completed", "stuck"]


def test_cli_writes_the_report_and_the_trace(tmp_path):
    html, trace = tmp_path / "report.html", tmp_path / "trace.json"
    r = runner.invoke(app, ["analyze-log", str(REAL4 / "tp_straggler"), "-q", "--html", str(html), "--trace", str(trace)])
    assert r.exit_code == 1, r.stderr
    assert r.stderr == f"ncclcheck: wrote {html}\nncclcheck: wrote {trace}\n"
    assert "verdict: lagging_rank" in r.stdout
    assert '<span class="kind">lagging_rank</span>' in html.read_text()
    assert json.loads(trace.read_text())["otherData"]["culprit_ranks"] == [3]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "trace.json"]  # no temporary left


@pytest.mark.parametrize("target", ["missing/report.html", "."])
def test_cli_refuses_an_unwritable_output_before_reading_anything(tmp_path, monkeypatch, target):
    def never(*a, **k):
        raise AssertionError("the analysis ran")

    monkeypatch.setattr("ncclcheck.job.analyze.analyze", never)
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["analyze-log", str(REAL4 / "tp_straggler"), "--html", target])
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"ncclcheck: error: {target}: ")
    assert r.stdout == ""


def test_the_demo_rank_whose_log_was_read_is_not_called_missing():
    """examples/incident-8rank: rank 5 never joined #2841 and its log says nothing of it; the page says so, and
    never that rank 5 is not in the inputs (the header counts 8 ranks with input)."""
    html = report_html(run(Path(__file__).parent.parent / "examples" / "incident-8rank"))
    assert "rank 5: #2841: not in its input (its log was read and says nothing of it)" in html
    assert "rank 5: #2841: not in the inputs" not in html
