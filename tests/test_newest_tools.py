"""The newest tools' own output as evidence (issue 44 §3) and the layers under NCCL provoked (issue 41 §3).

Every input is a recording: NCCL 2.32.3's ``NCCL DIAG`` lines and ``ncclras`` reports and PyTorch's debug server's
periodic dumps on 2 x H200 (tests/data/gpu/nccl232/), the same debug server on CPU with gloo
(tests/data/debug_server/), and torch 2.11 / NCCL 2.28.9 runs with a network plugin, interface, HCA or transport
set wrong or off (tests/data/gpu/layers/). Their READMEs say how each was made.
"""

from __future__ import annotations

import json

import pytest
from conftest import DATA, run
from hypothesis import given
from hypothesis import strategies as st

from ncclcheck.evidence import debugserver, rasjson
from ncclcheck.evidence.formats import nccldiag, ncclras
from ncclcheck.evidence.types import Clue, Fact, Loc
from ncclcheck.job.analyze import packed_kind

N232 = DATA / "gpu" / "nccl232"
RAS = N232 / "hang" / "ras"
LAYERS = DATA / "gpu" / "layers"


def _verdict(*paths):
    v = run(*paths).verdict
    return v.kind.value, v.cause.cause.kind if v.cause else None, list(v.culprit_ranks)


@pytest.mark.parametrize(("path", "kind", "cause", "culprits"), [
    # a live report while rank 1 sleeps before the all_reduce rank 0 waits in: rank 1 is behind (3 against 4)
    (RAS / "status_live.txt", "collective_mismatch", "ras_op_counts", []),
    (RAS / "verbose_live.txt", "collective_mismatch", "ras_op_counts", []),
    # 8 s after rank 1's SIGKILL: its process no longer answers
    (RAS / "status_dead.txt", "nccl_error", "ras_rank_missing", []),
    (RAS / "diagnostics_dead.txt", "nccl_error", "ras_rank_missing", []),
    (RAS / "diagnostics_live.txt", "no_failure", None, []),  # every check passed
    # the console with everything: the kill (a signal in the console) explains what the RAS saw
    (N232 / "hang", "rank_failed_first", "host_kill", [1]),
    # rank 1 in rank1_sleeps, rank 0 in synchronize; the fr_trace tables say rank 1 never issued all_reduce #4
    (N232 / "hang" / "debug", "lagging_rank", "fr_not_joined", [1]),
    (N232 / "hang" / "debug" / "fr_trace_20261127_145555.txt", "collective_mismatch", "fr_not_joined", [1]),
    # ncclras -f json: the same verdicts as the text reports of the same moments
    (RAS / "status_live.json", "collective_mismatch", "ras_op_counts", []),
    (RAS / "status_dead.json", "nccl_error", "ras_rank_missing", []),
    (DATA / "debug_server" / "gloo-hang" / "debug", "lagging_rank", None, [1]),
    (N232 / "diag", "no_failure", None, []),
    (N232 / "diag_warn", "no_failure", None, []),
    (N232 / "diag_p2poff", "no_failure", None, []),
    (N232 / "ifname", "setup_failure", "no_socket_interface", []),  # 2.32's WARN names the function too
    (N232 / "diag_env", "no_failure", None, []),  # NCCL_BUFFSIZE on rank 1 alone: NCCL says so, the job ran
    (N232 / "diag_gpus", "no_failure", None, []),
    # NCCL_PROTO=Simple on rank 1 alone: barrier()'s all_reduce never completed on either rank, no error: the
    # setting the ranks disagree on is the cause (job/transport.py); with no majority neither rank is named
    (N232 / "diag_env_proto", "all_ranks_stuck", "settings_differ_hang", []),
    # torch's own NCCL 2.28.9: its RAS report reads the same; the console's timeout names rank 1
    (N232 / "hang2289" / "ras" / "status_live.txt", "collective_mismatch", "ras_op_counts", []),
    (N232 / "hang2289" / "ras" / "diagnostics_live.txt", "no_failure", None, []),  # "Unknown command DIAGNOSTICS"
    (N232 / "hang2289", "lagging_rank", None, [1]),
])
def test_each_recording_of_the_newest_tools_reads_as_what_happened(path, kind, cause, culprits):
    assert _verdict(path) == (kind, cause, culprits)


@pytest.mark.parametrize(("case", "kind", "cause", "culprits"), [
    ("netplugin", "no_failure", None, []),  # the plugin is not found: NCCL falls back to IB, then sockets
    ("netplugin_sockets", "no_failure", None, []),
    ("ibhca", "no_failure", None, []),  # no HCA of that name: sockets
    ("ibhca_netib", "setup_failure", "net_plugin", [0, 1]),  # the same with NCCL_NET=IB: no transport at all
    ("net_bogus", "setup_failure", "net_plugin", [0]),
    ("ifname", "setup_failure", "no_socket_interface", []),
    ("family6", "no_failure", None, []),
    ("p2p_off", "no_failure", None, []),
    ("shm_off", "no_failure", None, []),
    ("p2p_shm_off", "no_failure", None, []),
    ("collnet", "no_failure", None, []),  # CollNet asked for without its plugin: silently not used
])
def test_the_layers_under_nccl_read_as_they_ran(case, kind, cause, culprits):
    assert _verdict(LAYERS / case / "console.log") == (kind, cause, culprits)


def test_the_ras_report_quotes_the_rank_behind_at_its_line():
    a = run(RAS / "status_live.txt")
    d = a.verdict.cause
    assert d is not None
    assert d.loc.line == 27 and "Rank 1 has launched up to operation 3" in d.text


def test_diag_lines_are_facts_of_the_process_and_faults_are_clues():
    """Every [OK] check of the init-time diagnostics is a fact; only the fault sentences are clues."""
    (scan,) = [s for s in run(N232 / "diag" / "console.log").scans]
    diag = [f for f in scan.facts if f.key == "nccl_diag_ok"]
    assert len(diag) == 10  # 8 RAS checks, net bw and P2P: rank 0 ran them for the communicator
    assert not [c for c in scan.clues if "NCCL DIAG" in c.text]
    said = list(nccldiag.FORMAT.reader().feed(
        "vm:1 NCCL DIAG [INFO] rdma_topo check: not usable on 2/2 ranks in comm 0x1 (unavailable)", Loc("x", 1)))
    assert said == []  # a check that could not run is no fault


def test_a_setting_that_differs_across_ranks_is_a_fact_with_its_values():
    (scan,) = run(N232 / "diag_env_proto" / "console.log").scans
    assert [f.value for f in scan.facts if f.key == "nccl_diag_setting"] == [
        "mismatch across 2 ranks in comm 0x40c336bd9ae3adc8 for NCCL_BUFFSIZE", "NCCL_BUFFSIZE=(unset) on rank(s) {0}",
        "NCCL_BUFFSIZE=8388608 on rank(s) {1}", "mismatch across 2 ranks in comm 0x40c336bd9ae3adc8 for NCCL_PROTO",
        "NCCL_PROTO=(unset) on rank(s) {0}", "NCCL_PROTO=Simple on rank(s) {1}"]


def test_the_debug_servers_newest_stack_dump_is_read_and_the_older_named():
    folder = N232 / "hang" / "debug"
    stacks = sorted(str(p) for p in folder.glob("stacks_*.txt"))
    assert [packed_kind(p) for p in stacks] == ["debug_stacks", "debug_stacks"]
    assert packed_kind(str(folder / "fr_trace_20261127_145555.txt")) == "debug_fr_trace"
    assert packed_kind(str(folder / "tcpstore_20261127_145634.txt")) == packed_kind(
        str(folder / "wait_counters_20261127_145555.txt")) == "debug_ranks"
    scans = debugserver.read_stacks(stacks)
    assert [(s.file.rsplit("/", 1)[1], s.path_rank) for s in scans] == [
        ("stacks_20261127_145550.txt", None), ("stacks_20261127_145555.txt", 0), ("stacks_20261127_145555.txt", 1)]
    assert "an earlier debug-server dump" in scans[0].problems[0].message
    (r0,), (r1,) = scans[1].live, scans[2].live
    assert (r0.global_rank, r0.host, r0.collective, r0.threads[0].frames[0].name) == (0, "vm", None, "synchronize")
    assert (r1.collective, r1.threads[0].frames[0].name) == (None, "rank1_sleeps")
    early = debugserver.read_stacks(stacks[:1])[0]
    assert early.live[0].collective == "all_reduce"  # 5 s earlier rank 0 was still inside all_reduce


def test_a_rank_the_debug_server_could_not_fetch_is_named_not_read(tmp_path):
    f = tmp_path / "stacks_20261127_150000.txt"
    f.write_text("PARTIAL DATA: 1/2 workers responded\n  Rank 1: ConnectionError: refused\n\n"
                 "=== Rank 0: http://node-a:41000/handler/dump_traceback? ===\n"
                 "Thread 0x00007f1996b83000 (most recent call first):\n"
                 '  File "/x/torch/distributed/distributed_c10d.py", line 3068 in all_reduce\n'
                 '  File "/x/train.py", line 9 in <module>\n\n'
                 "=== Rank 1: http://node-b:41001/handler/dump_traceback? ===\nError: 503\n")
    assert packed_kind(str(f)) == "debug_stacks"
    r0, r1 = debugserver.read_stacks([str(f)])
    assert (r0.live[0].host, r0.live[0].collective) == ("node-a", "all_reduce")
    assert not r1.live and "could not fetch rank 1's stacks (Error: 503)" in r1.problems[0].message


@given(st.lists(st.integers(0, 9), min_size=1, max_size=8))
def test_ras_counts_tell_every_rank_behind_another_whatever_the_order(counts):
    reader = ncclras.FORMAT.reader()
    lines = ["#0-0 (2b902544309b73fa) MISMATCH", "  Communicator ranks have different AllReduce operation counts",
             *(f"  Rank {r} has launched up to operation {k} -- GPU {r} managed by process {100 + r} on node h"
               for r, k in enumerate(counts))]
    said = [e for i, text in enumerate(lines) for e in reader.feed(text, Loc("r", i + 1))]
    assert all(isinstance(e, Clue) for e in said)
    told = sorted(e.loc.line - 3 for e in said)
    assert told == [r for r, k in enumerate(counts) if k < max(counts)]


def test_a_fact_is_what_an_ok_line_reads():
    (fact,) = nccldiag.FORMAT.reader().feed("h:1 NCCL DIAG [OK]   ECC: no uncorrected volatile errors across 2 ranks "
                                            "in comm 0x1", Loc("x", 1))
    assert fact == Fact(nccldiag.ANYONE, "nccl_diag_ok", "ECC: no uncorrected volatile errors across 2 ranks in comm "
                        "0x1", Loc("x", 1))


def test_the_fr_trace_tables_size_the_world_and_name_the_rank_that_never_issued():
    """The flight recorder's Collectives row with missing_ranks {1}: a clue on global rank 1 at its row, the default
    group's size a statement of the world, the members listed not taken as seen (where they are, no row says)."""
    f = N232 / "hang" / "debug" / "fr_trace_20261127_145555.txt"
    scan = debugserver.read_fr_trace(str(f))
    assert scan.ranks_seen == ()
    assert [(x.key, x.value, x.loc.line) for x in scan.facts] == [("fr_trace_world", "2", 14)]
    (clue,) = scan.clues
    assert (clue.who.global_rank, clue.loc.line) == (1, 21)
    assert clue.text == ("the flight recorder's analysis (debug server): rank 1 never issued collective #4 "
                         "(nccl:all_reduce, input sizes [[1048576]]) of group 0:default_pg, which rank 0 issued "
                         "(scheduled)")


def test_a_plain_table_keeps_cells_with_spaces_and_empty_columns(tmp_path):
    f = tmp_path / "fr_trace_20261127_150000.txt"
    f.write_text("=== FR Trace NCCL ===\n--- Groups ---\n  id  desc          size\n  x7  default_pg      4\n"
                 "--- Collectives ---\n  collective_seq_id  pg_desc       collective_name    expected_ranks    "
                 "collective_state    input_numel    missing_ranks\n"
                 "                 12  0:default_pg  nccl:all_gather    {0, 1, 2, 3}      started                            {2, 3}\n")
    assert packed_kind(str(f)) == "debug_fr_trace"
    scan = debugserver.read_fr_trace(str(f))
    assert [x.value for x in scan.facts] == ["4"]
    assert [(c.who.global_rank, c.text.split(": ", 1)[1]) for c in scan.clues] == [
        (r, f"rank {r} never issued collective #12 (nccl:all_gather, input sizes ?) of group 0:default_pg, which "
            "ranks 0, 1 issued (started)") for r in (2, 3)]


def test_the_store_keys_and_wait_counters_give_each_ranks_host():
    folder = N232 / "hang" / "debug"
    for name, lines in (("tcpstore_20261127_145634.txt", [1, 2]), ("wait_counters_20261127_145555.txt", [1, 58])):
        scan = debugserver.read_rank_addresses(str(folder / name))
        assert [(x.who.global_rank, x.key, x.value, x.loc.line) for x in scan.facts] == [
            (0, "host", "vm", lines[0]), (1, "host", "vm", lines[1])]
        assert scan.ranks_seen == (0, 1)


def test_periodic_dumps_of_each_series_are_read_newest_first_the_others_named():
    folder = N232 / "hang" / "debug"
    paths = sorted(str(p) for p in folder.glob("*_*.txt"))
    scans = debugserver.read_dumps({p: packed_kind(p) for p in paths})
    read = sorted(s.file.rsplit("/", 1)[1] for s in scans if not s.problems)
    assert read == ["fr_trace_20261127_145555.txt", "stacks_20261127_145555.txt", "stacks_20261127_145555.txt",
                    "tcpstore_20261127_145634.txt", "wait_counters_20261127_145555.txt"]
    named = [s for s in scans if s.problems]
    assert len(named) == len(paths) - 4
    assert all("an earlier debug-server dump than " + s.file.rsplit("/", 1)[1].split("_2026")[0] in
               s.problems[0].message for s in named)


@pytest.mark.parametrize("name", ["status_live", "status_dead"])
def test_ncclras_json_says_what_its_text_report_says(name):
    """``ncclras -f json`` of the same moment as the text report: the same verdict, at the JSON's own lines."""
    as_json, as_text = run(RAS / f"{name}.json"), run(RAS / f"{name}.txt")
    assert as_json.verdict.kind == as_text.verdict.kind
    assert as_json.verdict.summary.replace(f"{name}.json:", "@") .split("@")[0] == \
        as_text.verdict.summary.replace(f"{name}.txt:", "@").split("@")[0]
    at = {"status_live": 37, "status_dead": 39}[name]  # the JSON line of rank 1 ("rank": 1)
    assert f"{name}.json:{at}" in as_json.verdict.summary
    assert json.loads((RAS / f"{name}.json").read_text())["nccl_version"] == "2.32.3"


@given(st.recursive(st.none() | st.booleans() | st.integers(-3, 9) | st.text(max_size=4),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(
                        st.sampled_from(["rank", "pid", "host", "status", "collective_counts", "ranks",
                                         "missing_ranks", "hash", "AllReduce", "async_error", "considered_dead"]),
                        c, max_size=4), max_leaves=20))
def test_any_ncclras_json_reads_or_is_refused_in_one_line(tree):
    """Whatever a report holds in NCCL's fields, it is read or refused with ReportError, never a traceback."""
    doc = {"nccl_version": "2.32.3", "communicators_count": 1, "communicators": [tree]}
    data = json.dumps(doc, indent=2).encode()
    assert rasjson.looks_like(data[:1024])
    try:
        lines = rasjson.lines(data)
    except rasjson.ReportError as exc:
        assert "\n" not in str(exc)
    else:
        assert all(isinstance(n, int) and n >= 1 and isinstance(t, bytes) for n, t in lines)


def test_a_broken_ncclras_json_is_one_problem_and_other_inputs_still_read(tmp_path):
    bad = tmp_path / "ras.json"
    bad.write_text('{"nccl_version": "2.32.3", "communicators": [ {"hash": ')
    result = run(bad, RAS / "status_live.txt")
    (problem,) = [p for p in result.problems if p.file == str(bad)]
    assert problem.fatal and problem.message.startswith("an ncclras JSON report that is not valid JSON (")
    assert result.verdict.kind.value == "collective_mismatch"
