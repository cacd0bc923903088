"""A hang every rank shares, and the network NCCL fell back to (issue 41 §3): job/transport.py and job/netpath.py.

Recorded: tests/data/gpu/nccl232/diag_env_proto (NCCL_PROTO=Simple on rank 1 alone: barrier()'s one-element
all_reduce hung on both ranks with no error), tests/data/gpu/layers/netplugin and netplugin_sockets
(NCCL_NET_PLUGIN=nonexistent: NCCL fell back to IB, found no device, and ran on sockets), p2p_shm_off (no plugin asked
for, P2P and SHM off: the ranks count as two nodes joined by sockets). The text cases are built from the lines
ProcessGroupNCCL and NCCL print (the recordings' own words), to vary one thing at a time: the group's members
stated, the first collective, a setting on one rank of three.
"""

from __future__ import annotations

from conftest import DATA, run

from ncclcheck.render.json_out import analysis_json

PROTO = DATA / "gpu" / "nccl232" / "diag_env_proto" / "console.log"
LAYERS = DATA / "gpu" / "layers"


def _verdict(*paths) -> dict:
    v = analysis_json(run(*paths))["verdict"]
    return {"kind": v["kind"], "summary": v["summary"], "culprit_ranks": v["culprit_ranks"],
            "waiting_ranks": v["waiting_ranks"], "seq": v["seq"],
            "cause": {k: v["cause"][k] for k in ("kind", "detail", "ranks", "evidence")} if v["cause"] else None,
            "action": {k: v["action"][k] for k in ("kind", "reason")}, "next_steps": v["next_steps"]}


def _findings(path, *codes) -> list[dict]:
    return [f for f in analysis_json(run(path))["verdict"]["findings"] if f["code"] in codes]


def test_a_protocol_set_on_one_rank_is_named_as_the_hangs_cause():
    assert _verdict(PROTO) == {
        "kind": "all_ranks_stuck",
        "summary": (
            "Ranks 0-1 waited in ALLREDUCE NumelIn=1 (#6, PG 0 (default)) after completing #5 and none reported an "
            "error; the ranks ran with different NCCL_PROTO: unset (rank 0), Simple (rank 1) "
            f"({PROTO}:138). Each rank's NCCL picks a call's protocol, algorithm and "
            "transport from its own settings: where they pick differently, each waits for data the other never sends. "
            "No majority: either side may be the one set wrong. These inputs do not name every member of the group; "
            "the disagreement explains the hang without one."),
        "culprit_ranks": [],
        "waiting_ranks": [0, 1],
        "seq": 6,
        "cause": {"kind": "settings_differ_hang",
                  "detail": "the ranks ran with different NCCL_PROTO: unset (rank 0), Simple (rank 1)",
                  "ranks": [0, 1],
                  "evidence": [f"{PROTO}:{n}" for n in (138, 158, 217)]},
        "action": {"kind": "fix-config", "reason": "settings_differ_hang"},
        "next_steps": [
            "Give every rank the same NCCL_* environment: set it once for the whole job (the launcher's environment, "
            "the job script), not per node or per rank; unset the variable that differs or set it to one value "
            "everywhere.",
            "Compare what each rank read: NCCL_DEBUG=INFO prints `<NAME> set by environment to <value>` for every "
            "variable a rank's NCCL read (NCCL 2.32's NCCL_RUN_DIAGNOSTICS=1 compares them across the communicator: "
            "`NCCL environment: mismatch across N ranks ... for <NAME>`)."],
    }


def test_a_buffer_size_on_one_rank_is_no_cause():
    """NCCL_BUFFSIZE on rank 1 alone: the job ran to the end (diag_env), and no hang is blamed on such a setting."""
    v = run(DATA / "gpu" / "nccl232" / "diag_env").verdict
    assert (v.kind.value, v.cause) == ("no_failure", None)


def _timeouts(seq: int, ranks: int, env: dict[int, str] | None = None, done: int | None = None) -> str:
    """Every rank's ProcessGroupNCCL init line (the group's members), its NCCL settings, its timeout at ``seq``."""
    done = seq - 1 if done is None else done
    lines = []
    for r in range(ranks):
        lines += [
            f"[rank{r}]:[I1127 15:24:20.000000 ProcessGroupNCCL.cpp:988] [PG ID 0 PG GUID 0 Rank {r}] ProcessGroupNCCL "
            f"initialization options: size: {ranks}, global rank: {r}, TIMEOUT(ms): 60000",
            f"[rank{r}]:vm:{800 + r}:{800 + r} [{r}] NCCL INFO cudaDriverVersion 13000",
            f"[rank{r}]:vm:{800 + r}:{800 + r} [{r}] NCCL INFO NCCL version 2.28.9+cuda13.0",
        ]
        if env and r in env:
            lines.append(f"[rank{r}]:vm:{800 + r}:{800 + r} [{r}] NCCL INFO {env[r]}")
    for r in range(ranks):
        lines += [
            f"[rank{r}]:[E1127 15:25:22.375857511 ProcessGroupNCCL.cpp:689] [Rank {r}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
            "Timeout(ms)=60000) ran for 60019 milliseconds before timing out.",
            f"[rank{r}]:[E1127 15:25:22.376060443 ProcessGroupNCCL.cpp:2303] [PG ID 0 PG GUID 0(default_pg) Rank {r}]  "
            f"failure detected by watchdog at work sequence id: {seq} PG status: last enqueued work: {seq}, last "
            f"completed work: {done}",
        ]
    return "\n".join(lines) + "\n"


def test_every_member_stuck_in_the_first_collective_points_at_the_transport(tmp_path):
    log = tmp_path / "first.log"
    log.write_text(_timeouts(1, 2, done=0))
    v = _verdict(log)
    assert (v["kind"], v["culprit_ranks"], v["waiting_ranks"], v["seq"]) == ("all_ranks_stuck", [], [0, 1], 1)
    assert v["cause"]["kind"] == "first_collective_hang" and v["action"] == {"kind": "collect-more",
                                                                             "reason": "first_collective_hang"}
    assert v["summary"].startswith("Ranks 0-1 wait in ALLREDUCE NumelIn=1,048,576 (#1, PG 0 (default)), the group's "
                                   "first collective: every member is there and none reported an error, so no rank "
                                   "lagged.")
    steps = " ".join(v["next_steps"])
    for run_ in ("NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "NCCL_NET_GDR_LEVEL=0", "all_reduce_perf"):
        assert run_ in steps


def test_a_later_collective_is_no_first_collective(tmp_path):
    """Three collectives completed: the transport carried data; the first-collective cause is not given."""
    log = tmp_path / "later.log"
    log.write_text(_timeouts(4, 2))
    v = _verdict(log)
    assert (v["kind"], v["cause"]) == ("all_ranks_stuck", None)


def test_the_rank_with_the_odd_setting_is_named_where_there_is_a_majority(tmp_path):
    log = tmp_path / "algo.log"
    log.write_text(_timeouts(1, 3, env={0: "NCCL_ALGO set by environment to Tree"}, done=0))
    v = _verdict(log)
    assert (v["kind"], v["culprit_ranks"], v["waiting_ranks"]) == ("all_ranks_stuck", [0], [1, 2])
    assert v["cause"]["kind"] == "settings_differ_hang"
    assert v["cause"]["detail"] == "the ranks ran with different NCCL_ALGO: unset (ranks 1-2), Tree (rank 0)"
    assert "Rank 0 holds the odd value." in v["summary"]


def test_a_setting_is_no_cause_while_a_rank_failed(tmp_path):
    """A rank that raised explains the others' wait: the setting stays a finding."""
    log = tmp_path / "failed.log"
    text = _timeouts(1, 3, env={0: "NCCL_ALGO set by environment to Tree"}, done=0)
    text = "\n".join(x for x in text.splitlines() if not x.startswith("[rank2]:[E")) + "\n"
    log.write_text(text + "[rank2]:Traceback (most recent call last):\n[rank2]:RuntimeError: CUDA error: out of bounds\n")
    v = _verdict(log)
    assert (v["kind"], v["culprit_ranks"], v["cause"]) == ("rank_failed_first", [2], None)


def test_a_network_plugin_that_did_not_load_is_a_warning_with_its_cost_and_check():
    path = LAYERS / "netplugin" / "console.log"
    rel = path
    assert _findings(path, "net-plugin-fallback", "net-sockets-fallback") == [{
        "severity": "warning", "code": "net-plugin-fallback",
        "message": (
            "The job asked for the network plugin nonexistent (NCCL_NET_PLUGIN) and NCCL loaded none on ranks 0-1: it "
            "fell back to its internal network without an error and runs on Socket (Socket: TCP through each host's "
            "kernel: a few GB/s per connection at best against 25-50 GB/s for a 200-400 Gb/s RDMA NIC, no GPUDirect "
            "RDMA, CPU cycles on every transfer; collectives between nodes run several times slower). Its "
            "communicator is on one node, where P2P and SHM carry the data: it costs where ranks are on different "
            "nodes."),
        "evidence": [f"{rel}:27", f"{rel}:28", f"{rel}:35"],
        "fix": (
            "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET: a loaded plugin prints `NET/Plugin: Loaded net plugin <name>` "
            "and `Using network <name>`. Set NCCL_NET to the plugin's network name (`NCCL_NET=AWS Libfabric`, "
            "`NCCL_NET=IB`) so that NCCL fails at init (`Failed to initialize any NET plugin`) instead of falling "
            "back; `ldconfig -p | grep nccl-net` and LD_LIBRARY_PATH inside the container show whether the library "
            "is there."),
    }]
    assert run(path).verdict.kind.value == "no_failure"  # a finding, not a failure


def test_the_plugin_fallback_on_sockets_carries_the_data_between_the_nodes_nccl_counts():
    path = LAYERS / "netplugin_sockets" / "console.log"
    (f,) = _findings(path, "net-plugin-fallback", "net-sockets-fallback")
    assert f["code"] == "net-plugin-fallback" and "runs on Socket" in f["message"]
    assert "Its communicator is on one node" not in f["message"]  # P2P and SHM off: NCCL counts 2 nodes


def test_sockets_without_a_plugin_asked_for_are_information_only_between_nodes():
    (f,) = _findings(LAYERS / "p2p_shm_off" / "console.log", "net-plugin-fallback", "net-sockets-fallback")
    assert (f["severity"], f["code"]) == ("info", "net-sockets-fallback")
    assert f["message"].startswith("On ranks 0-1, whose communicator spans several nodes as NCCL counts them (1 of 2 "
                                   "ranks on a node), NCCL loaded no network plugin and runs on its internal sockets")
    for case in ("ibhca", "family6", "shm_off"):  # one node, P2P or SHM carry the data: nothing to say
        assert not _findings(LAYERS / case / "console.log", "net-plugin-fallback", "net-sockets-fallback"), case
