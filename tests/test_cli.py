"""CliRunner checks of stdout, stderr and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REAL
from typer.testing import CliRunner

from ncclcheck import __version__
from ncclcheck.cli import app

runner = CliRunner()
EXAMPLE = str(REAL.parents[2] / "examples" / "incident-8rank")


def test_demo_incident_json_contract():
    """--json is plain JSON with schema_version, records and the verdict; nothing on stderr."""
    r = runner.invoke(app, ["analyze-log", EXAMPLE, "--json"], catch_exceptions=False)
    assert (r.exit_code, r.stderr) == (1, "")
    j = json.loads(r.stdout)
    assert j["schema_version"] == 7 and j["per_rank"] is None
    # Seven ranks timed out in the same all_reduce: one class of records, the first one's line as its evidence.
    (rec,) = j["records"]
    assert (rec["ranks"], rec["count"], rec["op_type"], rec["seq"], rec["numel_in"]) == (
        "0-4, 6-7", 7, "ALLREDUCE", 2841, 467019003)
    assert rec["at"].endswith("rank0.log:155") and rec["ran_for_ms"] == [600031, 600080]
    assert j["inputs"] == {"files": 8, "lines": j["inputs"]["lines"], "bytes": j["inputs"]["bytes"],
                           "kinds": {"log": 8}, "ranks_seen": "0-7"}
    assert [(c["ranks"], c["ending"]["kind"]) for c in j["job"]["ranks"]] == [("0-4, 6-7", "timed_out"),
                                                                            ("5", "silent")]
    assert [(e["waiters"], e["targets"], e["reason"]) for e in j["job"]["edges"]] == [("0-4, 6-7", "5", "not_reached")]
    assert j["verdict"]["kind"] == "lagging_rank"
    assert j["verdict"]["culprit_ranks"] == [5]
    assert j["verdict"]["waiting_ranks"] == [0, 1, 2, 3, 4, 6, 7]
    assert j["verdict"]["seq"] == 2841
    codes = [f["code"] for f in j["verdict"]["findings"]]
    assert codes[:2] == ["lagging-rank", "size-not-the-cause"]
    assert j["verdict"]["chain"][0].startswith("ranks 0-4, 6-7 wait in PG 0 (default) #2841")
    assert j["job"]["world_size"] == 8 and j["job"]["roots"] == [5]
    assert j["problems"] == []
    assert "\x1b[" not in r.stdout


def test_quiet_prints_only_the_verdict():
    r = runner.invoke(app, ["analyze-log", EXAMPLE, "-q"], env={"COLUMNS": "100"}, catch_exceptions=False)
    assert r.exit_code == 1
    assert "verdict: lagging_rank" in r.stdout
    assert "findings" not in r.stdout and "next steps" not in r.stdout


def test_full_report_sections():
    r = runner.invoke(app, ["analyze-log", EXAMPLE], env={"COLUMNS": "120"}, catch_exceptions=False)
    assert r.exit_code == 1
    for part in ("verdict: lagging_rank", "who waits for whom", "ranks, folded by state", "findings",
                 "size-not-the-cause", "next steps", "silent, culprit", "0-4, 6-7"):
        assert part in r.stdout


def test_no_failure_exits_0(tmp_path):
    p = tmp_path / "ok.log"
    p.write_text("all good\n")
    r = runner.invoke(app, ["analyze-log", str(p), "-q"], catch_exceptions=False)
    assert (r.exit_code, r.stderr) == (0, f"ncclcheck: {p}: read, but holds nothing ncclcheck reads (no rank, "
                                          "record, error, exit, setting or host record)\n")
    assert "no_failure" in r.stdout


def test_bad_dtype_is_usage_error():
    r = runner.invoke(app, ["analyze-log", EXAMPLE, "--dtype", "complex7"])
    assert r.exit_code == 2
    assert "unknown dtype 'complex7'" in r.stderr


def test_no_arguments_is_usage_error():
    r = runner.invoke(app, ["analyze-log"])
    assert r.exit_code == 2


def test_version():
    r = runner.invoke(app, ["--version"])
    assert (r.exit_code, r.stdout) == (0, f"ncclcheck {__version__}\n")


def test_dtype_changes_the_size_arithmetic():
    r = runner.invoke(app, ["analyze-log", EXAMPLE, "--json", "--dtype", "bf16"], catch_exceptions=False)
    size = next(f for f in json.loads(r.stdout)["verdict"]["findings"] if f["code"] == "size-not-the-cause")
    assert "934.04 MB (bf16 assumed" in size["message"]


@pytest.mark.parametrize("columns", ["40", "60", "80"])
def test_narrow_terminals_cut_no_number_and_no_command(columns):
    """Numbers stay whole (the rank table stacks instead), and the export line pastes whole."""
    r = runner.invoke(app, ["analyze-log", EXAMPLE], env={"COLUMNS": columns}, catch_exceptions=False)
    assert r.exit_code == 1
    assert "…" not in r.stdout
    assert "467,019,003" in r.stdout and "2841/2840" in r.stdout
    export = next(line for line in r.stdout.splitlines() if line.lstrip().startswith("export "))
    assert export.strip().endswith("TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/tmp/nccl_trace_rank_")


@pytest.mark.parametrize("columns", ["40", "60", "80"])
def test_commands_in_steps_paste_whole(columns):
    """A `command` in a next step is on one line at any width (here torchrun's logging flags)."""
    log = str(Path(__file__).parent / "data" / "failures" / "node_lost" / "node1.console.log")
    r = runner.invoke(app, ["analyze-log", log], env={"COLUMNS": columns}, catch_exceptions=False)
    assert r.exit_code == 1
    assert "`torchrun --log-dir DIR --redirects 3 --tee 3`" in r.stdout
    assert "`dmesg -T`" in r.stdout


def test_json_without_any_readable_input_is_still_an_object(tmp_path):
    """--json with nothing to read: exit 3, the reasons on stderr, and on stdout one JSON object whose `problems`
    say why and whose verdict is null (a script never parses an empty stdout)."""
    empty = tmp_path / "empty.log"
    empty.write_text("")
    r = runner.invoke(app, ["analyze-log", "--json", str(tmp_path / "missing.log"), str(empty)])
    assert r.exit_code == 3
    j = json.loads(r.stdout)
    assert j["schema_version"] == 7 and j["verdict"] is None and j["records"] == []
    assert [(p["file"], p["fatal"]) for p in j["problems"]] == [(str(tmp_path / "missing.log"), True), (str(empty), False)]


def test_evidence_paths_name_the_ranks_file():
    """A torchrun per-rank file is named with its attempt folder: `attempt_0/3/stderr.log`, never a bare
    `3/stderr.log` (whose rank and attempt a reader cannot tell)."""
    from ncclcheck.render.report import short_names

    names = short_names(["logs/run/attempt_0/3/stderr.log", "logs/run/attempt_0/2/stderr.log", "logs/console.log",
                         "logs/run/attempt_1/3/stderr.log"])
    assert names == {"logs/run/attempt_0/3/stderr.log": "attempt_0/3/stderr.log",
                     "logs/run/attempt_0/2/stderr.log": "attempt_0/2/stderr.log", "logs/console.log": "console.log",
                     "logs/run/attempt_1/3/stderr.log": "attempt_1/3/stderr.log"}
