"""Versions are facts: each rank's releases and settings read from its own lines, the cross-rank table, a mismatch
as a finding with its consequence, and the releases to rule out where no catalogued cause explains a failure
(issue 41 §2, issue 44 §2)."""

from __future__ import annotations

import json
import re

from conftest import DATA, run
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.evidence.formats import envreport, nccl_release
from ncclcheck.evidence.types import Loc
from ncclcheck.findings import Severity
from ncclcheck.job.model import VerdictKind
from ncclcheck.job.releases import regressions, release, release_findings
from ncclcheck.job.versions import read_versions
from ncclcheck.render.versions import versions_json

CONSOLE = DATA / "real4" / "tp_straggler_info" / "console.log"  # 4 ranks, NCCL_DEBUG=INFO, recorded on 4 H200s
AT = Loc("x.log", 1)


def _facts(reader, *lines: str) -> list[tuple[str, str]]:
    r = reader.reader()
    return [(f.key, f.value) for line in lines for f in r.feed(line, AT)]


# ------------------------------------------------------------------------------------------------ the readers
def test_nccl_lines_of_a_recorded_run_read_as_their_facts():
    """Real lines of tests/data/real4/tp_straggler_info/console.log (NCCL 2.28.9, one per rank)."""
    lines = CONSOLE.read_text().splitlines()
    assert _facts(nccl_release.FORMAT, lines[17], lines[18], lines[48], lines[112]) == [
        ("cuda_driver", "13.0"), ("nccl_cuda", "13.0"), ("net_plugin", "internal"), ("nccl_host", "vm"),
        ("local_ranks", "4 of 4")]


def test_older_and_plugin_lines_read_as_the_source_prints_them():
    """NCCL 2.21's "No plugin found", 2.23's "Could not find: ... Using internal network plugin.", a loaded
    plugin, and aws-ofi-nccl's own lines (aws/aws-ofi-nccl src/nccl_ofi_net.cpp)."""
    assert _facts(nccl_release.FORMAT,
                  "h:1:1 [0] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)",
                  "h:1:1 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
                  "h:1:1 [0] NCCL INFO NET/Plugin: Loaded net plugin AWS Libfabric (v5)",
                  "h:1:1 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.21.1",
                  "h:1:1 [0] NCCL INFO NET/OFI Using Libfabric version 2.3",
                  "h:1:1 [0] NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v8 symbol.",
                  "NCCL version 2.19.3+cuda12.3",
                  "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error, NCCL version 2.14.3") \
        == [("net_plugin", "internal"), ("nccl_host", "h"), ("net_plugin", "internal"), ("nccl_host", "h"),
            ("net_plugin", "AWS Libfabric (v5)"), ("nccl_host", "h"),
            ("aws_ofi_nccl", "1.21.1"), ("libfabric", "2.3"), ("nccl_cuda", "12.3")]


def test_collect_env_report_reads_its_releases_and_its_gpu_list():
    """torch.utils.collect_env's report (env_info_fmt) as pasted in pytorch/pytorch#153960: eight GPUs under the
    heading, a value not collected is not read."""
    report = ["PyTorch version: 2.6.0+cu124", "Is debug build: False", "CUDA used to build PyTorch: 12.4",
              "CUDA runtime version: Could not collect", "GPU models and configuration:",
              *(f"GPU {i}: NVIDIA H100 80GB HBM3" for i in range(8)), "", "Nvidia driver version: 570.133.20",
              "Architecture:        x86_64"]
    facts = _facts(envreport.FORMAT, *report)
    assert facts[:2] == [("torch", "2.6.0+cu124"), ("torch_cuda", "12.4")]
    assert ("gpu_count", "8") in facts and {v for k, v in facts if k == "gpu_model"} == {"NVIDIA H100 80GB HBM3"}
    assert facts[-2:] == [("driver", "570.133.20"), ("cpu_arch", "x86_64")]
    assert _facts(envreport.FORMAT, "- DeepSpeed version: not installed", "- Accelerate version: not installed") == []


@given(st.integers(1, 20), st.integers(0, 9))
def test_the_driver_number_is_the_cuda_release_it_stands_for(major, minor):
    """cudaDriverGetVersion returns 1000 x major + 10 x minor (CUDA runtime API, cudaDriverGetVersion)."""
    assert nccl_release.driver_cuda(str(1000 * major + 10 * minor)) == f"{major}.{minor}"


@given(st.text(max_size=200))
def test_the_readers_read_any_line_without_failing(line):
    for source in (nccl_release.FORMAT, envreport.FORMAT):
        assert all(f.key and f.value for f in source.reader().feed(line, AT))


# ------------------------------------------------------------------------------------------ the cross-rank table
def test_the_cross_rank_table_of_a_recorded_console_is_its_golden():
    """Every aspect of the 4-rank console, checked by hand against its lines: NCCL 2.28.9+cuda13.0 and
    cudaDriverVersion 13000 on every rank (lines 18-23, 45-47, 66-68), NET/Plugin's internal fallback, sockets on
    eth0, no IB device, NCCL_NVLS_ENABLE=0 (line 112 and its peers), ProcessGroupNCCL's TORCH_NCCL_* settings."""
    got = json.loads(json.dumps(versions_json(run(CONSOLE).job.facts.versions)))
    assert got == json.loads((DATA / "versions" / "tp_straggler_info.json").read_text())


def _mismatched(tmp_path):
    """The same console with rank 3 moved to another release and host set-up: NCCL 2.27.3 built for CUDA 12.9, a
    driver for CUDA 12.9, its socket on eth1, NCCL_NVLS_ENABLE not set."""
    out = []
    for line in CONSOLE.read_text().splitlines():
        if line.startswith("[default3]:"):
            if "NCCL_NVLS_ENABLE set by environment" in line:
                continue
            line = (line.replace("NCCL version 2.28.9+cuda13.0", "NCCL version 2.27.3+cuda12.9")
                    .replace("NCCL version: 2.28.9", "NCCL version: 2.27.3")
                    .replace("cudaDriverVersion 13000", "cudaDriverVersion 12090")
                    .replace("NET/Socket : Using [0]eth0", "NET/Socket : Using [0]eth1"))
        out.append(line)
    path = tmp_path / "console.log"
    path.write_text("\n".join(out) + "\n")
    return path


def test_a_rank_on_another_release_is_named_with_the_consequence(tmp_path):
    a = run(_mismatched(tmp_path))
    v = a.job.facts.versions
    rows = {r.aspect: r for r in v.rows if not r.agrees}
    assert set(rows) == {"NCCL version", "NCCL's CUDA", "driver CUDA", "NCCL interfaces", "NCCL_NVLS_ENABLE"}
    assert all(r.odd == ("3",) for r in rows.values())
    assert [(g.value, g.members) for g in rows["NCCL_NVLS_ENABLE"].groups] == [("0", ("0", "1", "2")), (None, ("3",))]
    found = {f.code: f for f in a.verdict.findings}
    version = found["nccl-version-differs"]
    assert version.severity is Severity.ERROR
    assert version.message.startswith("NCCL version differs (odd one out: rank 3). NCCL compares every rank's version")
    assert "hang at init" in version.message
    assert version.evidence == ("2.28.9 (ranks 0-2)", "2.27.3 (rank 3)")
    assert version.fix == "make NCCL version the same on every rank (change rank 3)"
    assert found["ib-setting-differs"].evidence == ("0 (ranks 0-2)", "unset (rank 3)")
    assert found["interfaces-differ"].evidence == ("eth0 (ranks 0-2)", "eth1 (rank 3)")
    assert {"driver-differs", "nccl-build-differs"} <= set(found)


def test_the_report_and_the_json_show_the_table(tmp_path):
    path = _mismatched(tmp_path)
    result = CliRunner().invoke(app, ["analyze-log", str(path)], env={"COLUMNS": "200", "NO_COLOR": "1"})
    out = result.stdout
    assert "versions: NCCL 2.28.9 (0-2) | 2.27.3 (3); NCCL's CUDA 13.0 (0-2) | 12.9 (3); driver CUDA 13.0 (0-2) | " \
           "12.9 (3); net plugin internal" in out
    assert "across ranks 0-3: 12 aspects agree, 5 differ:" in out
    assert "  NCCL_NVLS_ENABLE: 0 (0-2) | unset (3)" in out
    j = json.loads(CliRunner().invoke(app, ["analyze-log", "--json", str(path)]).stdout)
    assert j["schema_version"] == 7
    row = next(r for r in j["job"]["versions"]["aspects"] if r["aspect"] == "NCCL version")
    assert row == {"aspect": "NCCL version", "agrees": False, "odd": "3", "unknown": None,
                   "groups": [{"value": "2.28.9", "members": "0-2"}, {"value": "2.27.3", "members": "3"}]}


def test_one_rankless_paste_of_two_releases_is_two_members(write):
    """A paste that names no rank: the second release is its first line's, so the two are told apart."""
    path = write("paste.log", "a:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
                 "b:2:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4", "c:3:3 [0] NCCL INFO NCCL version 2.19.3+cuda12.3")
    row = read_versions(run(path).scans).row("NCCL version")
    assert row is not None and [(g.value, g.members) for g in row.groups] == [
        ("2.21.5", (str(path),)), ("2.19.3", (f"{path}:3",))]


def test_a_job_that_prints_no_version_has_no_table(write):
    a = run(write("rank0.log", "step 1 loss 2.0"))
    assert a.job.facts.versions.rows == () and versions_json(a.job.facts.versions) is None


# ------------------------------------------------------------------------------ releases and known regressions
def test_every_known_regression_is_sourced_and_well_formed():
    table = regressions()
    assert 3 <= len(table) <= 8  # a small table: each entry confirmed upstream
    for r in table:
        assert r.source.startswith("https://github.com/") and r.confirmed and r.symptom and r.when
        assert release(r.fixed) is not None and release(r.fixed) > r.last


def _versions(tmp_path, *lines: str):
    path = tmp_path / "rank0.log"
    path.write_text("\n".join(lines) + "\n")
    return run(path).job.facts.versions


def test_an_unexplained_hang_on_a_release_with_a_known_regression_names_it(tmp_path):
    v = _versions(tmp_path, "h:1:1 [0] NCCL INFO NCCL version 2.25.1+cuda12.8", "PyTorch version: 2.7.0+cu128")
    found = release_findings(v, VerdictKind.ALL_RANKS_STUCK, explained=False)
    codes = [f.code for f in found]
    # NCCL's ncclCommAbort hang, PyTorch 2.7.0's, and 2.25.1's kernels on compute capability 12.0 GPUs (worded with
    # its condition: the versions table holds no GPU generation to decide it)
    assert codes == ["known-regression", "known-regression", "known-regression", "releases-to-check"]
    assert "NCCL 2.25.1 (" in found[0].message and "ncclCommAbort hangs" in found[0].message
    assert found[0].evidence == ("https://github.com/pytorch/pytorch/issues/149153",)
    assert "PyTorch 2.7.0+cu128" in found[1].message
    assert "compute capability 12.0" in found[2].message
    assert found[3].fix is not None and found[3].fix.startswith("if this began after an upgrade, run the previous "
                                                                "release of NCCL (then of PyTorch)")
    assert release_findings(v, VerdictKind.ALL_RANKS_STUCK, explained=True) == []
    assert release_findings(v, VerdictKind.COLLECTIVE_MISMATCH, explained=False) == []


def test_an_architecture_bound_regression_needs_the_architecture(tmp_path):
    nccl = "h:1:1 [0] NCCL INFO NCCL version 2.29.2+cuda13.0"
    x86 = release_findings(_versions(tmp_path, nccl, "Architecture: x86_64"), VerdictKind.NCCL_ERROR, False)
    arm = release_findings(_versions(tmp_path, nccl, "Architecture: aarch64"), VerdictKind.NCCL_ERROR, False)
    assert [f.code for f in x86] == ["releases-to-check"]
    assert [f.code for f in arm] == ["known-regression", "releases-to-check"]
    assert re.search(r"aarch64 hosts", arm[0].message)


_KEYS = st.sampled_from(["nccl_version", "cuda_driver", "net_socket", "gpu_count", "NCCL_IB_HCA", "TORCH_NCCL_X"])


@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 7)), _KEYS, st.sampled_from(["1", "2", "[0]eth0:x<0>"])),
                max_size=40))
def test_every_member_is_in_one_group_of_a_row_or_unknown(facts):
    """Per aspect, the members that said it are grouped by value, each once; the others are unknown."""
    from ncclcheck.evidence.types import Fact, FileScan, Who

    scan = FileScan("f.log", None, 0, 0, (), facts=tuple(
        Fact(Who(global_rank=r), k, v, Loc("f.log", i + 1)) for i, (r, k, v) in enumerate(facts)))
    versions = read_versions([scan])
    for row in versions.rows:
        held = [m for g in row.groups for m in g.members] + list(row.unknown)
        assert sorted(held) == sorted(versions.members)
        assert len(row.groups) == len({g.value for g in row.groups})


# The recorded logs, not the folder: its README quotes their lines
TWONODE = (DATA / "versions" / "twonode" / "node0.log", DATA / "versions" / "twonode" / "node1.log")


def test_a_recorded_two_agent_console_shows_the_odd_setting_across_ranks():
    """Two torchrun agents of one job (tests/data/versions/twonode, recorded on 2 x H200): the table has ranks 0 and
    1, they agree on NCCL 2.28.9, and NCCL_IB_DISABLE, set by the second agent alone, is a disagreement."""
    versions = versions_json(run(*TWONODE).job.facts.versions)
    aspects = {a["aspect"]: a for a in versions["aspects"]}
    assert versions["members"] == "0-1"
    assert aspects["NCCL version"]["agrees"] and aspects["NCCL version"]["groups"][0]["value"] == "2.28.9"
    assert not aspects["NCCL_IB_DISABLE"]["agrees"]


def test_each_agents_local_tag_is_placed_by_its_own_ncclinit_line():
    """Both consoles print torchrun's ``[default0]:`` (the local rank); NCCL's init line of the same process states
    ``rank 0 nRanks 2`` in node0.log and ``rank 1 nRanks 2`` in node1.log, so the odd setting is rank 1's (exact JSON
    of the two aspects that tell it, checked by hand against node1.log:7 and both logs' init lines)."""
    result = CliRunner().invoke(app, ["analyze-log", *map(str, TWONODE), "--json"])
    data = json.loads(result.stdout)
    aspects = {a["aspect"]: a for a in data["job"]["versions"]["aspects"]}
    assert data["job"]["versions"]["members"] == "0-1"
    assert aspects["NCCL_IB_DISABLE"] == {"aspect": "NCCL_IB_DISABLE", "agrees": False, "unknown": None, "odd": None,
                                          "groups": [{"value": None, "members": "0"}, {"value": "1", "members": "1"}]}
    assert aspects["NCCL version"] == {"aspect": "NCCL version", "agrees": True, "unknown": None, "odd": None,
                                       "groups": [{"value": "2.28.9", "members": "0-1"}]}
    assert data["inputs"]["ranks_seen"] == "0-1" and data["job"]["ranks"][0]["ranks"] == "0-1"
