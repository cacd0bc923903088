"""``probe --compare``: what must agree across hosts, grouped by value, the odd ones named (issue 44, section 2).

The three files in tests/data/hosts/compare are real runs of ``probe --format json``: ``h200x2.json`` on the
2 x H200 device machine (a probe from before ``driver_cuda``/``torch_cuda`` were collected, so those are unknown
there), ``cpu-vm.json`` on the development VM, ``cpu-vm-alt.json`` on the same VM with
``NCCL_SOCKET_IFNAME==lo NCCL_IB_DISABLE=1 NCCL_PROTO=Simple``. All three hosts are called ``vm``, so the files'
names label them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.findings import Severity
from ncclcheck.probe.agree import Group, Row, disagreements, names, rule_for, table
from ncclcheck.probe.nodes import FIXED, facts, labels, runtime_findings

DATA = Path(__file__).parent / "data" / "hosts" / "compare"
FILES = [str(DATA / f) for f in ("h200x2.json", "cpu-vm.json", "cpu-vm-alt.json")]
runner = CliRunner()


def _unset_if_upper(aspect: str) -> bool:
    return aspect.isupper()


# ---------------------------------------------------------------- grouping

def test_groups_largest_first_and_the_minority_is_odd():
    rows = table({"a": {"V": "1"}, "b": {"V": "2"}, "c": {"V": "1"}}, _unset_if_upper)
    assert rows == (Row("V", (Group("1", ("a", "c")), Group("2", ("b",)))),)
    assert rows[0].odd == ("b",) and not rows[0].agrees


def test_a_tie_has_no_odd_one_and_keeps_the_members_order():
    (row,) = table({"a": {"V": "2"}, "b": {"V": "1"}}, _unset_if_upper)
    assert row.groups == (Group("2", ("a",)), Group("1", ("b",))) and row.odd == ()


def test_absent_is_unset_for_settings_and_unknown_otherwise():
    rows = {r.aspect: r for r in table({"a": {"NCCL_PROTO": "Simple", "driver": "580"}, "b": {}, "c": {}},
                                       _unset_if_upper)}
    assert rows["NCCL_PROTO"].groups == (Group(None, ("b", "c")), Group("Simple", ("a",)))
    assert rows["NCCL_PROTO"].odd == ("a",)
    assert rows["driver"].groups == (Group("580", ("a",)),) and rows["driver"].unknown == ("b", "c")
    assert rows["driver"].agrees  # a host that cannot tell is never a difference


@given(st.dictionaries(st.text("abc", min_size=1, max_size=3),
                       st.dictionaries(st.sampled_from(["V", "W", "x"]), st.sampled_from(["1", "2", "3"])),
                       min_size=1, max_size=8))
def test_every_member_lands_in_exactly_one_group_or_unknown(observed):
    for row in table(observed, _unset_if_upper):
        seen = [m for g in row.groups for m in g.members] + list(row.unknown)
        assert sorted(seen) == sorted(observed)
        sizes = [len(g.members) for g in row.groups]
        assert sizes == sorted(sizes, reverse=True)
        assert row.agrees == (len({observed[m].get(row.aspect) for m in observed if m not in row.unknown}) <= 1)
        assert set(row.odd) <= set(observed) - set(row.groups[0].members)
        assert not row.odd or sizes[0] > sizes[1]


@pytest.mark.parametrize(("members", "text"), [
    (["gpu01", "gpu02", "gpu03", "gpu07", "login", "gpu10"], "gpu[01-03,07,10], login"),
    (["n1", "n2"], "n[1-2]"),
    (["h200x2", "cpu-vm", "cpu-vm-alt"], "h200x2, cpu-vm, cpu-vm-alt"),
    (["3", "0", "1", "2", "9"], "0-3, 9"),  # ranks (log-derived members) read as rank ranges
    (["node9", "node10"], "node9, node10"),  # different widths are different stems: never re-padded
    ([], "none"),
])
def test_names_fold_host_lists_and_rank_ranges(members, text):
    assert names(members) == text


@pytest.mark.parametrize(("aspect", "code", "severity"), [
    ("NCCL version", "nccl-version-differs", Severity.ERROR),
    ("PyTorch version", "torch-version-differs", Severity.WARNING),
    ("CUDA runtime", "torch-version-differs", Severity.WARNING),
    ("driver", "driver-differs", Severity.WARNING),
    ("driver CUDA", "driver-differs", Severity.WARNING),
    ("GPU model", "gpu-model-differs", Severity.WARNING),
    ("GPU count", "gpu-count-differs", Severity.WARNING),
    ("NCCL_PROTO", "proto-algo-differs", Severity.ERROR),
    ("NCCL_ALGO", "proto-algo-differs", Severity.ERROR),
    ("NCCL_IB_DISABLE", "transport-differs", Severity.ERROR),
    ("NCCL_NET", "transport-differs", Severity.ERROR),
    ("NCCL_IB_HCA", "ib-setting-differs", Severity.WARNING),
    ("NCCL_IB_TIMEOUT", "ib-setting-differs", Severity.WARNING),
    ("NCCL MTU", "mtu-differs", Severity.WARNING),
    ("NCCL interfaces", "interfaces-differ", Severity.WARNING),
    ("MASTER_ADDR", "rendezvous-differs", Severity.ERROR),
    ("NCCL_DEBUG", "debug-setting-differs", Severity.INFO),
    ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "setting-differs", Severity.WARNING),
])
def test_each_aspect_has_its_consequence(aspect, code, severity):
    rule = rule_for(aspect)
    assert (rule.code, rule.severity) == (code, severity) and rule.source


def test_every_fixed_aspect_has_a_rule_of_its_own():
    assert all(rule_for(a).code != "setting-differs" for a in FIXED)


def test_a_disagreement_names_the_odd_ones_and_the_fix():
    (row,) = table({"gpu01": {"NCCL version": "2.27.3"}, "gpu02": {"NCCL version": "2.27.3"},
                    "gpu03": {"NCCL version": "2.28.9"}}, _unset_if_upper)
    (f,) = disagreements([row])
    assert f.code == "nccl-version-differs" and f.message.startswith("NCCL version differs (odd one out: gpu03). ")
    assert "Mismatched NCCL version detected" in f.message
    assert f.evidence == ("2.27.3 (gpu[01-02])", "2.28.9 (gpu03)")
    assert f.fix == "make NCCL version the same on every host (change gpu03)"
    (r,) = disagreements([row], member="rank")
    assert r.fix == "make NCCL version the same on every rank (change gpu03)"
    assert disagreements(table({"a": {"V": "1"}, "b": {"V": "1"}}, _unset_if_upper)) == ()


# ---------------------------------------------------------------- a host's own CUDA

@pytest.mark.parametrize(("driver", "runtime", "expected"), [
    ("12.4", "13.0", Severity.ERROR), ("12.4", "12.8", Severity.INFO), ("13.0", "13.0", None),
    ("13.0", "12.8", None), (None, "12.8", None), ("12.4", None, None),
])
def test_driver_older_than_the_runtime(driver, runtime, expected):
    found = runtime_findings("gpu01", {"probe": {"driver_cuda": driver, "torch_cuda": runtime}})
    assert [f.severity for f in found] == ([expected] if expected else [])
    if expected is Severity.ERROR:
        assert "cudaErrorInsufficientDriver" in found[0].message and found[0].code == "driver-older-than-runtime"


def test_an_older_probe_file_leaves_new_aspects_unknown():
    doc = json.loads((DATA / "h200x2.json").read_text())
    got = facts(doc)
    assert "driver CUDA" not in got and "CUDA runtime" not in got
    assert (got["NCCL version"], got["GPU count"], got["GPU model"], got["NCCL MTU"]) == ("2.28.9", "2", "NVIDIA H200",
                                                                                         "1400")


def test_labels_fall_back_to_file_names_when_hosts_share_a_name():
    docs = [{"probe": {"hostname": "vm"}}, {"probe": {"hostname": "vm"}}]
    assert labels(["a/x.json", "b/y.json"], docs) == ("x", "y")
    assert labels(["a/x.json", "b/x.json"], docs) == ("a/x.json", "b/x.json")
    assert labels(["a.json", "b.json"], [{"probe": {"hostname": "n1"}}, {"probe": {"hostname": "n2"}}]) == ("n1", "n2")


# ---------------------------------------------------------------- the three recorded hosts

def test_three_recorded_hosts_json_is_exact():
    r = runner.invoke(app, ["probe", "--compare", *FILES, "--format", "json"], catch_exceptions=False)
    assert r.exit_code == 1
    got = json.loads(r.stdout)
    assert got == json.loads((DATA / "expected-compare.json").read_text())
    # checked by hand against the three files
    rows = {a["aspect"]: a for a in got["aspects"]}
    assert rows["NCCL_PROTO"]["groups"] == [{"value": None, "hosts": ["h200x2", "cpu-vm"]},
                                            {"value": "Simple", "hosts": ["cpu-vm-alt"]}]
    assert rows["NCCL version"]["odd"] == ["h200x2"] and rows["NCCL MTU"]["odd"] == ["cpu-vm-alt"]
    assert rows["driver CUDA"] == {"aspect": "driver CUDA", "agrees": True,
                                   "groups": [{"value": "no GPU", "hosts": ["cpu-vm", "cpu-vm-alt"]}],
                                   "odd": [], "unknown": ["h200x2"]}
    assert [f["code"] for f in got["findings"] if f["severity"] == "error"] == [
        "nccl-version-differs", "transport-differs", "proto-algo-differs"]


def test_three_recorded_hosts_report():
    r = runner.invoke(app, ["probe", "--compare", *FILES], env={"COLUMNS": "80"}, catch_exceptions=False)
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    block = lines[lines.index("NCCL_PROTO (odd: cpu-vm-alt)"):][:3]
    assert block == ["NCCL_PROTO (odd: cpu-vm-alt)", "  unset   h200x2, cpu-vm", "  Simple  cpu-vm-alt"]
    for line in ("3 hosts: h200x2, cpu-vm, cpu-vm-alt", "NCCL version (odd: h200x2)", "  no NCCL wheel  cpu-vm, cpu-vm-alt",
                 "  2.28.9         h200x2", "  192.0.2.0/24, fd00::/64  h200x2, cpu-vm",
                 "  CUDA runtime  none (CPU build)  (h200x2 cannot tell)", "  RDMA ports    none active"):
        assert line in lines
    assert lines[lines.index("findings") + 1].startswith("error   nccl-version-differs: NCCL version differs (odd")


def test_a_probe_compared_with_itself_agrees():
    r = runner.invoke(app, ["probe", "--compare", FILES[0], FILES[0], "--format", "json"], catch_exceptions=False)
    got = json.loads(r.stdout)
    assert (r.exit_code, got["differs"], got["findings"]) == (0, False, [])
    assert all(a["agrees"] for a in got["aspects"])


def test_a_foreign_file_is_a_usage_error(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"probe": 3}')
    r = runner.invoke(app, ["probe", "--compare", FILES[0], str(bad)])
    assert r.exit_code == 2 and f"{bad}: not the output of `ncclcheck probe --format json`" in r.stderr
    assert "(1 of 2 read)" in r.stderr and r.stdout == ""


def test_a_bad_file_is_named_and_the_others_still_compared(tmp_path):
    """One line on stderr per file that cannot be read; the rest are compared and printed; exit 2 says one was left
    out (a host missing from the table is not a host that agrees)."""
    bad, missing = tmp_path / "bad.json", tmp_path / "missing.json"
    bad.write_text("{not json")
    r = runner.invoke(app, ["probe", "--compare", FILES[0], str(bad), FILES[1], str(missing), "--format", "json"])
    got = json.loads(r.stdout)
    errors = [line for line in r.stderr.splitlines() if line.startswith("ncclcheck: error: ")]
    assert r.exit_code == 2 and len(got["hosts"]) == 2 and len(errors) == 2
    assert f"{bad}: not valid JSON" in errors[0] and str(missing) in errors[1]
