"""Real torch 2.11 / NCCL 2.28.9 output from 2 ranks on H200s (tests/data/gpu, written by the corpus GPU run).

* async-error: rank 1 SIGKILLed mid-all_reduce over NCCL's socket transport; rank 0 gets an async NCCL error.
* kill-p2p: the same kill over NVLink/P2P: rank 0 only times out; its dump lands in the default path.
* default-path: rank 1 skips an all_reduce; rank 0 times out, signals the dump through the TCPStore; both ranks
  dump to ``~/.cache/torch/comm_lib_trace_rank_<rank>`` (the 2.11 default).
* live-p2p: flight-recorder dumps taken from Python on a live job after send/recv; the debug-pipe lines.
* pipe-subgroup (second run): rank 0 writes to its debug pipe (a dump of the live job), then a sub-group ("tp")
  all_reduce times out; live dumps as JSON; pipe-subgroup-launcher: the same without torchrun.
* probe-torch-2.11.txt: torch 2.11 has no ``nccl2`` backend (``is_backend_available('nccl2')`` is False, no
  ``[TC]``/``TORCH_DIST_USE_NCCL2`` literal in its libraries); nccl2 lines are tested from the source text instead.
"""

from __future__ import annotations

from conftest import DATA, run

from ncclcheck.evidence.frdump import parse_dump

G = DATA / "gpu"


def test_async_nccl_error_is_an_error_on_the_work():
    """The survivor's work 178 raised "remote process exited": an error (once per kind of line), not a timeout."""
    a = run(G / "async-error")
    (s0,) = [s for s in a.scans if s.file.endswith("rank0.log")]
    (w,) = s0.works
    assert (w.evidence, w.seq, w.op_type, w.numel_in, w.timeout_ms) == ("async_exception", 178, "ALLREDUCE",
                                                                        1048576, 30000)
    assert w.error == "NCCL error: remote process exited or there was a network error, NCCL version 2.28.9"
    (st,) = s0.statuses
    assert (st.seq, st.last_enqueued, st.last_completed, st.error) == (178, 227, 177, w.error)
    assert [e.kind.value for e in s0.errors] == ["connection_closed"] * 3  # two NCCL WARN lines, one NCCL error
    assert [(i.group_rank, i.size, i.timeout_ms) for s in a.scans for i in s.group_inits] == [(0, 2, 30000),
                                                                                             (1, 2, 30000)]


def test_kill_over_p2p_is_only_a_timeout_on_the_survivor():
    """Over NVLink the dead peer goes unnoticed: rank 0 times out at 202 and dumps; rank 1 printed nothing more."""
    a = run(G / "kill-p2p")
    (r,) = a.records
    assert (r.rank, r.global_rank, r.seq, r.op_type, r.numel_in, r.timeout_ms, r.ran_for_ms) == (
        0, 0, 202, "ALLREDUCE", 1048576, 15000, 15050)
    assert (r.last_enqueued, r.last_completed) == (251, 201)
    assert a.verdict.culprit_ranks == (1,)
    (dump,) = [s.dump for s in a.scans if s.dump]
    assert (dump.rank, dump.version, dump.comm_lib_version) == (0, "2.10", "2.28.9")
    assert [e.state for e in dump.entries if e.seq == 202] == ["scheduled"]


def test_default_dump_path_and_tcpstore_signal():
    """Rank 0 broadcasts the dump signal; rank 1 observes it via the TCPStore; both write the default path."""
    a = run(G / "default-path" / "console.log", G / "default-path" / "torch-cache")
    (r,) = a.records
    assert (r.global_rank, r.seq, r.numel_in, r.timeout_ms, r.ran_for_ms) == (0, 3, 3072, 10000, 10033)
    assert a.verdict.culprit_ranks == (1,)
    (text,) = [s for s in a.scans if s.file.endswith("console.log")]
    assert [(d.who.global_rank, d.from_rank, d.last_enqueued, d.last_completed) for d in text.dump_signals] == [
        (1, 0, 2, 2), (0, None, 3, 2)]
    events = [(e.kind, e.who.global_rank) for e in text.dump_events]
    assert events[:4] == [("broadcast", 0), ("first_pg", 0), ("store_signal", 1), ("preparing", 1)]
    written = sorted(e.detail.split("/.cache/")[1] for e in text.dump_events if e.kind == "writing")
    assert written == ["torch/comm_lib_trace_rank_0", "torch/comm_lib_trace_rank_1"]
    assert sorted((s.dump.rank, len(s.dump.entries)) for s in a.scans if s.dump) == [(0, 3), (1, 2)]


def test_per_rank_files_of_the_same_run_agree():
    """torchrun's per-rank stderr files of that run give the same record as its --tee console."""
    a = run(G / "default-path" / "attempt_0")
    (r,) = a.records
    assert (r.global_rank, r.path_rank, r.seq, r.ran_for_ms) == (0, 0, 3, 10033)


def test_live_dumps_name_p2p_peers():
    """A send on rank 0 and the matching recv on rank 1, as torch 2.11 records them (group ranks)."""
    d0, d1 = (parse_dump((G / "live-p2p" / f"fr_live_rank{r}.pickle").read_bytes(), f"fr_live_rank{r}.pickle")
              for r in (0, 1))
    (send,) = [e for e in d0.entries if e.is_p2p]
    (recv,) = [e for e in d1.entries if e.is_p2p]
    assert (send.op, send.peer, send.p2p_seq, send.input_sizes) == ("send", 1, 1, ((7,),))
    assert (recv.op, recv.peer, recv.p2p_seq) == ("recv", 0, 1)
    assert (send.thread_name, send.thread_id is not None) == ("python3", True)
    assert d0.pg_desc == {"0": "default_pg", "1": "tp"}


def test_debug_pipe_is_announced():
    """With TORCH_NCCL_DEBUG_INFO_PIPE_FILE each rank names its FIFO (write to it for a dump of the live job)."""
    a = run(G / "live-p2p" / "console.log")
    pipes = [(e.who.rank, e.detail.rsplit("/", 1)[1]) for s in a.scans for e in s.dump_events
             if e.kind == "pipe_opened"]
    assert pipes == [(0, "pipe_0.pipe"), (1, "pipe_1.pipe")]  # ranks from the --tee "[defaultN]:" prefix


def test_pipe_dump_then_subgroup_timeout():
    """Second run: a write to rank 0's debug pipe dumps the live job; then a sub-group ("tp") all_reduce times out."""
    g = G / "pipe-subgroup"
    a = run(g / "console.log", g / "torch-cache")
    (r,) = a.records
    assert (r.rank, r.global_rank, r.seq, r.op_type, r.numel_in, r.timeout_ms, r.ran_for_ms) == (
        0, 0, 2, "ALLREDUCE", 15, 8000, 8016)
    assert (r.pg.id, r.pg.guid, r.pg.desc, r.last_enqueued, r.last_completed) == ("1", "1", "tp", 2, 1)
    assert a.verdict.culprit_ranks == (1,)
    (text,) = [s for s in a.scans if s.file.endswith("console.log")]
    kinds = [(e.kind, e.who.global_rank, e.pg.id if e.pg else None) for e in text.dump_events]
    pipe = kinds.index(("pipe_signal", 0, "0"))
    assert kinds[pipe + 1] == ("preparing", 0, "0")
    assert kinds.index(("broadcast", 0, "1")) > pipe and ("first_pg", 0, "1") in kinds  # the timed-out group signals
    # PG 0's monitor prints the dump signal, with PG 0's counters, for the timeout in PG 1.
    assert [(d.who.global_rank, d.from_rank, d.pg.id, d.last_enqueued) for d in text.dump_signals] == [
        (0, None, "0", 4), (1, 0, "0", 4)]
    (d0,) = [s.dump for s in a.scans if s.dump and s.dump.rank == 0]
    assert [(e.op, e.pg, e.seq, e.state) for e in d0.entries if e.pg == "1"] == [
        ("all_reduce", "1", 1, "completed"), ("all_reduce", "1", 2, "scheduled")]


def test_real_json_dumps_read_like_pickles():
    """torch 2.11's _dump_nccl_trace_json output: same entries, peers and groups as the pickle."""
    a = run(G / "pipe-subgroup" / "live")
    dumps = sorted((s.dump for s in a.scans if s.dump), key=lambda d: d.rank)
    assert [(d.rank, d.version, d.comm_lib_version) for d in dumps] == [(0, "2.10", "2.28.9"), (1, "2.10", "2.28.9")]
    assert [[(e.op, e.peer) for e in d.entries if e.is_p2p] for d in dumps] == [[("send", 1)], [("recv", 0)]]
    assert dumps[0].entries[0].thread_name == "python3"
    assert a.verdict.kind.value == "no_failure"  # a live job's dumps: everything completed


def test_launcher_files_of_the_second_run():
    """The same run without torchrun (one file per rank, no prefixes): the same record and dump steps."""
    a = run(G / "pipe-subgroup-launcher")
    (r,) = a.records
    assert (r.rank, r.path_rank, r.seq, r.pg.desc, r.ran_for_ms) == (0, 0, 2, "tp", 8026)
    by_rank = {s.path_rank: [e.kind for e in s.dump_events] for s in a.scans}
    assert by_rank[1][:3] == ["pipe_opened", "store_signal", "preparing"]
    assert "pipe_signal" in by_rank[0]
