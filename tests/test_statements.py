"""The table of stated lines (ncclcheck/job/statements.toml): each entry read and checked, found on a real line, and
carried into the verdict: the quoted line's meaning, the cause's first fix, a stated reason's kind and action.

The logs here are written from the sources' own format strings (NCCL's WARN header and its messages, PyTorch's
checks, vLLM's logger), not from any thread's words; the public threads whose lines these are score in
tests/test_public_threads.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DATA

from ncclcheck.evidence.reader import resolve
from ncclcheck.job.analyze import analyze
from ncclcheck.job.findings import FIRST_UNEXPLAINED, SKIPPED_STEP
from ncclcheck.job.statements import STATEMENTS, StatementTableError, read_table, told
from ncclcheck.render.json_out import analysis_json


def _verdict(path: Path) -> dict:
    problems: list[str] = []
    sources = resolve([str(path)], lambda e: problems.append(str(e)))
    assert not problems
    return analysis_json(analyze(sources, workers=1))["verdict"]


def _log(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "rank.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_every_entry_says_what_a_line_means_with_its_source():
    """Unique ids, a fix and a source each, and no entry hidden behind an earlier one for its own fixture line."""
    assert len({s.id for s in STATEMENTS}) == len(STATEMENTS) >= 10
    for s in STATEMENTS:
        assert s.means and s.fix and len(s.source) > 20, s.id


def test_every_entry_is_found_on_a_recorded_line():
    """A rule for no line is none: each entry's words are on a line of some fixture, and that line is the entry's
    (the first that matches), so no entry is shadowed by another."""
    lines = [x for p in sorted(DATA.rglob("*.log")) if not p.relative_to(DATA).parts[0].startswith("blind_threads")
             for x in p.read_text(errors="replace").splitlines()]
    for s in STATEMENTS:
        mine = [x for x in lines if s.pattern.search(x)]
        assert mine, s.id
        assert any((t := told(x)) is not None and t.id == s.id for x in mine), s.id  # a quoting entry's is a copy


def test_a_bad_entry_is_one_error_naming_it(tmp_path):
    good = 'id = "x"\nmatch = "y"\nmeans = "m"\nkind = ""\nclass = "fix-config"\nfix = ["f"]\nsource = "s"\n'
    bad = tmp_path / "statements.toml"
    bad.write_text("[[line]]\n" + good.replace('class = "fix-config"', 'class = "reboot"'))
    with pytest.raises(StatementTableError, match=r"entry 1 \(x\).*reboot"):
        read_table(bad)
    bad.write_text("[[line]]\n" + good.replace('match = "y"', 'match = "("'))
    with pytest.raises(StatementTableError, match="does not compile"):
        read_table(bad)
    bad.write_text("[[line]]\n" + good + "[[line]]\n" + good)
    with pytest.raises(StatementTableError, match="twice"):
        read_table(bad)


def test_a_cause_puts_the_lines_mechanism_first(tmp_path):
    """ib_setup's line is a memory registration refused (NCCL's wrap_ibv_reg_mr, strerror ENOMEM): the fix names the
    locked-memory limit before the verbs call's general steps, in the JSON and the next steps."""
    log = _log(tmp_path, "node1:2001:2002 [0] misc/ibvwrap.cc:198 NCCL WARN Call to ibv_reg_mr failed with error "
                         "Cannot allocate memory")
    v = _verdict(log)
    assert v["cause"]["kind"] == "ib_setup"
    assert "ulimit -l" in v["cause"]["fix"][0] and "ulimit -l" in v["next_steps"][0]
    assert v["stated"]["meaning"].startswith("the NIC's driver could not register (pin) memory")


def test_a_specific_cause_keeps_its_own_fix_first():
    """NVLS's set-up failing with CUDA's 'invalid argument' (failure_corpus/42): the cause nvls_fabric says more than
    the line's generic entry, so its own fix stays first and the entry's follows."""
    v = _verdict(DATA / "failure_corpus" / "42-nccl976-nvls-invalid-argument.log")
    fix = v["cause"]["fix"]
    assert v["cause"]["kind"] == "nvls_fabric" and "NCCL_NVLS_ENABLE=0" in fix[0]
    assert fix[-1].startswith("Run another NCCL release")


def test_a_stated_line_alone_takes_its_kind_meaning_and_action(tmp_path):
    """NCCL's WARN from ncclTopoIdToNetDev (src/graph/topo.h) is a set-up failure with NCCL's release to change."""
    log = _log(tmp_path, "node1:2001:2002 [3] graph/topo.h:269 NCCL WARN Could not find NET with id 2")
    v = _verdict(log)
    assert (v["kind"], v["cause"]["kind"], v["action"]["kind"], v["action"]["reason"]) == (
        "setup_failure", "stated_reason", "fix-config", "stated_mechanism")
    assert v["cause"]["fix"][0].startswith("Run another NCCL release")
    assert "ncclTopoIdToNetDev" in v["stated"]["meaning"]


@pytest.mark.parametrize("line", [
    "Check failed: result == ncclSuccess (1 vs. 0)  unhandled cuda error",  # glog's CHECK_EQ over NCCL's result
    "UnknownError: ncclCommInitRank failed: unhandled system error",
])
def test_ncclgeterrorstring_words_are_nccls_error_whoever_prints_them(tmp_path, line):
    """ncclGetErrorString's words without PyTorch's "NCCL error" prefix are still NCCL's error (src/init.cc)."""
    v = _verdict(_log(tmp_path, line))
    assert v["kind"] != "no_failure"
    assert v["stated"]["source"] == "nccl_error" and v["stated"]["text"].startswith("NCCL error: unhandled")


def test_an_exception_behind_a_python_loggers_header_is_read(tmp_path):
    """vLLM's logger ("%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s") before a traceback's line."""
    v = _verdict(_log(tmp_path, "(RayWorkerWrapper pid=77) ERROR 02-12 02:14:01 worker_base.py:574] RuntimeError: "
                                "Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] "
                                "no error"))
    assert (v["kind"], v["cause"]["kind"]) == ("setup_failure", "gloo_unreachable")


def test_determined_rank_tag_is_left_off(tmp_path):
    """ProcessGroupNCCL's constructor check behind Determined's "[rank=0] ": read, with the CUDA environment's fix."""
    v = _verdict(_log(tmp_path, "[rank=0] ValueError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!"))
    assert v["kind"] == "setup_failure"
    assert "LD_LIBRARY_PATH" in v["cause"]["fix"][0]


def _first_timeout(seq: int, completed: int) -> str:
    """Both ranks of a two-rank job time out in the same collective (ProcessGroupNCCL's watchdog and status lines)."""
    return "\n".join(
        f"[rank{r}]:[E1122 05:10:03.208457661 ProcessGroupNCCL.cpp:689] [Rank {r}] Watchdog caught collective operation "
        f"timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for "
        f"600015 milliseconds before timing out.\n[rank{r}]:[E1122 05:10:03.208500000 ProcessGroupNCCL.cpp:2168] "
        f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]  failure detected by watchdog at work sequence id: {seq} PG "
        f"status: last enqueued work: {seq}, last completed work: {completed}" for r in (0, 1))


def test_a_first_collective_with_no_error_gets_the_isolating_runs(tmp_path):
    """Nothing ever completed (last completed -1) and nothing failed: the path's isolating runs and the releases; a
    later collective does not get them."""
    first = _verdict(_log(tmp_path, _first_timeout(1, -1), "WORLD_SIZE=2"))
    assert first["kind"] == "all_ranks_stuck"
    # every member known and stuck in it: the cause (job/transport.py) gives the isolating runs as next steps, and
    # the finding does not say them twice
    assert first["cause"]["kind"] == "first_collective_hang"
    assert "NCCL_P2P_DISABLE=1" in first["next_steps"][0]
    fixes = {f["code"]: f["fix"] for f in first["findings"]}
    assert not fixes["first-collective"].endswith(FIRST_UNEXPLAINED)
    later = _verdict(_log(tmp_path, _first_timeout(7, 6), "WORLD_SIZE=2"))
    assert later["kind"] == "all_ranks_stuck"
    assert "first-collective" not in {f["code"] for f in later["findings"]}


def test_ranks_missing_from_a_timeout_may_have_skipped_the_collective(tmp_path):
    """One rank's timeout, the others' lines absent: one of them may never have called it (a collective completes
    only when every member calls it)."""
    v = _verdict(_log(tmp_path, *_first_timeout(7, 6).splitlines()[:2], "WORLD_SIZE=4"))
    assert (v["kind"], v["next_steps"][1]) == ("incomplete_evidence", SKIPPED_STEP)


def test_the_table_is_on_the_failures_page():
    page = (Path(__file__).resolve().parents[1] / "docs" / "failures.md").read_text()
    assert all(f"### `{s.id}`" in page for s in STATEMENTS)
