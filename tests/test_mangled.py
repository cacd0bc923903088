"""Logs as people paste them: every excerpt of the corpus, mangled the ways real logs are, gives the same records.

The mangles, each from a mechanism rather than one file:

* a terminal's hard wrap at every width from 60 to 250 columns (step 10): it falls anywhere, inside a `[rankN]:`
  prefix, between a header and its record, inside a key or a counter's digits;
* a log collector's prefix on every line (a CRI timestamp, a Ray actor, a host name, a quote bar);
* a progress bar another process drew into a record line on the same terminal (`\\r` and a tqdm bar);
* test output: pytest's word-wrapped exception, every line behind `E       `;
* restatements alone: the watchdog's own line and the status lines removed, the record is read from
  "watchdog thread terminated with exception", `what():` or the RuntimeError, with its group.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from conftest import CONFORMANCE, DATA, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncclcheck.render.json_out import record_json

FIELDS = ("rank", "global_rank", "pg", "seq", "op_type", "numel_in", "numel_out", "tensor_shape", "timeout_ms",
          "ran_for_ms", "last_enqueued", "last_completed")
EXCERPTS = sorted(DATA.glob("corpus/*.log")) + (sorted(CONFORMANCE.glob("*.log")) if CONFORMANCE.is_dir() else [])
PREFIXES = ("2025-01-01T00:00:00.123456789Z stderr F ", "(RayWorkerWrapper pid=4954, ip=10.7.35.246) ",
            "2025-01-01 12:00:00,123 INFO ", "node-017: ", "| ", "2026-11-23T09:40:01.123456789Z ",
            "[2026-11-23 09:40:01] node4 ")
BAR = "\rEpoch 0:  45%|████▌     | 9/20 [00:03<00:04,  2.50it/s, loss=0.312]"
RECORDISH = re.compile(r"WorkNCCL|work:|Rank \d+\]")


def _records(path) -> list[dict]:
    return [{f: r[f] for f in FIELDS} for r in map(record_json, run(path).records)]


def _read(text: str, tmp_path: Path, name: str) -> list[dict]:
    p = tmp_path / name
    p.write_bytes(text.encode())
    return _records(p)


def _text(log: Path) -> str:
    return log.read_bytes().decode("utf-8", "replace")


def _wrap(text: str, width: int) -> str:
    return "\n".join(line[i:i + width] for line in text.split("\n") for i in range(0, max(len(line), 1), width))


@pytest.mark.parametrize("log", EXCERPTS, ids=lambda p: p.stem)
def test_hard_wraps_at_any_width_keep_every_field(log, tmp_path):
    want = _records(log)
    for width in range(60, 251, 10):
        assert _read(_wrap(_text(log), width), tmp_path, log.name) == want, width


@pytest.mark.parametrize("log", EXCERPTS, ids=lambda p: p.stem)
def test_a_collector_prefix_on_every_line_keeps_every_field(log, tmp_path):
    want = _records(log)
    for prefix in PREFIXES:
        text = "\n".join(prefix + line if line else line for line in _text(log).split("\n"))
        assert _read(text, tmp_path, log.name) == want, prefix


def _errors(path) -> list[tuple]:
    """Every rank's errors and clues as read: what a rank raised must survive a prefix as its records do."""
    a = run(path)
    return sorted((e.who.rank, e.kind.value, e.message) for s in a.scans for e in s.errors) + sorted(
        (c.who.rank, c.kind, c.text) for s in a.scans for c in s.clues)


@pytest.mark.parametrize("log", EXCERPTS, ids=lambda p: p.stem)
def test_a_collector_prefix_on_every_line_keeps_every_error(log, tmp_path):
    """Exceptions, NCCL errors and the lines that say why (Last error, CUDA errors) are read through the prefix too."""
    want = _errors(log)
    for prefix in PREFIXES:
        text = "\n".join(prefix + line if line else line for line in _text(log).split("\n"))
        p = tmp_path / log.name
        p.write_bytes(text.encode())
        assert _errors(p) == want, prefix


@pytest.mark.parametrize("log", EXCERPTS, ids=lambda p: p.stem)
def test_prose_wrapped_test_output_keeps_every_field(log, tmp_path):
    """pytest prints an exception word-wrapped, every line behind "E       ": the record is read from it."""
    want = _records(log)
    for width in range(60, 131, 10):
        lines = [piece for line in _text(log).split("\n")
                 for piece in (textwrap.wrap(line, width, break_long_words=True, break_on_hyphens=False,
                                             replace_whitespace=False) or [""])]
        assert _read("\n".join("E       " + x for x in lines), tmp_path, log.name) == want, width


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_progress_bar_drawn_into_a_record_is_read_around(data, tmp_path):
    log = data.draw(st.sampled_from(EXCERPTS))
    lines = _text(log).split("\n")
    hit = [i for i, line in enumerate(lines) if RECORDISH.search(line) and len(line) > 1]
    if not hit:
        return
    i = data.draw(st.sampled_from(hit))
    at = data.draw(st.integers(1, len(lines[i]) - 1))
    lines[i] = lines[i][:at] + BAR + lines[i][at:]
    assert _read("\n".join(lines), tmp_path, log.name) == _records(log)


_PRIMARY = re.compile(r"Watchdog caught collective operation timeout")
_RESTATED = re.compile(r"thread terminated with exception|what\(\)|communicator was aborted|Error")
_STATUS = re.compile(r"failure detected by watchdog|detected by watchdog at work|Timeout at NCCL work|Received a")
RESTATING = ("thread_terminated", "what", "communicator_aborted_runtimeerror")


def _restatements(log: Path) -> list[str]:
    """The excerpt without the watchdog's own lines and the status lines."""
    return [x for x in _text(log).split("\n")
            if not ((_PRIMARY.search(x) and not _RESTATED.search(x)) or _STATUS.search(x))]


@pytest.mark.parametrize("log", [x for x in EXCERPTS if _restatements(x) != _text(x).split("\n")], ids=lambda p: p.stem)
def test_restatements_alone_give_the_record_and_its_group(log, tmp_path):
    """Without the watchdog's line and the status lines, each restated record is still found, with its group when
    the restatement prints one (``[PG ID 1 PG GUID …] Process group watchdog thread terminated …``)."""
    kept = _restatements(log)
    full = [record_json(r) for r in run(log).records]
    got = _read("\n".join(kept), tmp_path, log.name)
    keys = ("rank", "seq", "op_type", "numel_in", "numel_out", "timeout_ms", "ran_for_ms")
    for want in (r for r in full if set(r["evidence"]) & set(RESTATING)):
        same = [g for g in got if all(g[k] == want[k] for k in keys)
                and g["global_rank"] in (want["global_rank"], None)]
        assert same, want
        restated_pg = any("[PG" in x and _RESTATED.search(x) for x in kept)
        if want["pg"] is not None and restated_pg:
            assert same[0]["pg"] == want["pg"]


def test_digits_cut_at_the_end_of_a_status_line(tmp_path):
    """'last completed work: 2|15': the next line, starting with a digit and no header, finishes the counter;
    a next line that starts otherwise is not taken in."""
    log = tmp_path / "rank1.log"
    log.write_text("[rank1]:[E1122 10:00:00.0 ProcessGroupNCCL.cpp:2303] [PG ID 2 PG GUID 7 Rank 0]  failure detected "
                   "by watchdog at work sequence id: 216 PG status: last enqueued work: 216, last completed work: 2\n"
                   "15\n"
                   "[rank1]:[E1122 10:00:00.1 ProcessGroupNCCL.cpp:2303] [PG ID 3 PG GUID 8 Rank 0]  failure detected "
                   "by watchdog at work sequence id: 9 PG status: last enqueued work: 9, last completed work: 8\n"
                   "  what():  something else\n")
    assert [(r["seq"], r["last_completed"]) for r in _records(log)] == [(216, 215), (9, 8)]


def test_the_rank_comes_from_context(tmp_path):
    """The same record printed first without and then with a `[rankN]:` prefix is one record of that rank; a
    prefix glued after other text counts; a continuation line under a prefixed line is that rank's."""
    line = ("[E1122 10:00:00.0 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600083 "
            "milliseconds before timing out.")
    log = tmp_path / "console.log"
    log.write_text(f"{line}\n[rank3]:{line}\n")
    assert [(r["global_rank"], r["rank"], r["seq"]) for r in _records(log)] == [(3, 3, 9)]
    log.write_text(f"2025-01-01T00:00:00Z stderr F trainer-2:rank5]:{line}\n")
    assert [r["global_rank"] for r in _records(log)] == [5]
    log.write_text(f"[rank6]:[E1122 10:00:00.0 ProcessGroupNCCL.cpp:2057] [PG ID 1 PG GUID 4(tp) Rank 0] Process "
                   f"group watchdog thread terminated with exception:\n{line[46:]}\n")
    [r] = _records(log)
    assert (r["global_rank"], r["pg"], r["seq"]) == (6, {"id": "1", "guid": "4", "desc": "tp"}, 9)


def test_a_record_in_pytest_output_without_its_status_line(tmp_path):
    log = tmp_path / "pytest.txt"
    log.write_text("    def test_allreduce():\n>       dist.all_reduce(t)\n"
                   "E       torch.distributed.DistBackendError: [Rank 1] Watchdog caught collective\n"
                   "E       operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=4,\n"
                   "E       NumelOut=4, Timeout(ms)=1000) ran for\n"
                   "E       1003 milliseconds before timing out.\n\ntests/test_dist.py:12: DistBackendError\n")
    [r] = _records(log)
    assert (r["rank"], r["seq"], r["op_type"], r["numel_out"], r["timeout_ms"], r["ran_for_ms"]) == (
        1, 5, "ALLREDUCE", 4, 1000, 1003)


def test_a_wrap_after_the_parenthesis_keeps_ran_for(tmp_path):
    """The watchdog's record goes on past WorkNCCL(...): a wrap right there must not lose 'ran for'."""
    log = tmp_path / "rank3.log"
    log.write_text("[rank3]:[E1122 11:18:45.006097316 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective "
                   "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000)\n"
                   " ran for 600083 milliseconds before timing out.\n")
    [r] = _records(log)
    assert (r["global_rank"], r["seq"], r["ran_for_ms"]) == (3, 9, 600083)


def test_a_wrap_inside_the_opening_words_keeps_the_rank(tmp_path):
    log = tmp_path / "what.log"
    log.write_text("  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with "
                   "exception: [Rank 3] Watc\nhdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
                   "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1) ran for 90 milliseconds before timing out.\n")
    [r] = _records(log)
    assert (r["rank"], r["seq"], r["ran_for_ms"], r["pg"]["desc"]) == (3, 1, 90, "default_pg")


def _oom_job(ranks: int = 64, culprit: int = 37) -> list[str]:
    """One file of a whole job, lines interleaved as a launcher's merged console shows them: rank 37 raises CUDA's
    out-of-memory error in its backward pass, every other rank's watchdog times out on the all_reduce it left."""
    tb = [f"[rank{culprit}]:Traceback (most recent call last):",
          f'[rank{culprit}]:  File "/app/train.py", line 212, in <module>',
          f"[rank{culprit}]:    loss.backward()",
          f"[rank{culprit}]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has a "
          "total capacity of 79.10 GiB of which 1.02 GiB is free."]
    waits = [f"[rank{r}]:[E1123 09:50:01.{r:06d}000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
             "operation timeout: WorkNCCL(SeqNum=4118, OpType=ALLREDUCE, NumelIn=7936744, NumelOut=7936744, "
             "Timeout(ms)=600000) ran for 600081 milliseconds before timing out." for r in range(ranks) if r != culprit]
    lines = waits[:20] + tb[:2] + waits[20:41] + tb[2:] + waits[41:]
    return lines


@pytest.mark.parametrize("prefix", ["", "worker-4: ", "2026-11-23T09:40:01.123456789Z ", "[2026-11-23 09:40:01] node4 "])
def test_a_collector_prefix_does_not_hide_the_rank_that_raised(prefix, tmp_path):
    p = tmp_path / "job.log"
    p.write_text("\n".join(prefix + x for x in _oom_job()) + "\n")
    v = run(p).verdict
    assert (v.kind.value, v.culprit_ranks) == ("rank_failed_first", (37,)), v.summary
    assert "CUDA out of memory" in v.summary


def test_a_rank_prefix_glued_after_a_long_line_keeps_the_global_rank(tmp_path):
    """A progress bar drawn without its carriage return, then the record with its [rank3]: prefix, 300 characters
    into the line: the record is rank 3's (global), not only "[Rank 3]" of an unknown group."""
    bar = "Epoch 0:  45%|" + "█" * 120 + "| 9/20 [00:03<00:04,  2.50it/s, loss=0.312]" + " " * 80
    rec = ("[rank3]:[E1122 10:00:03.123456789 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation "
           "timeout: WorkNCCL(SeqNum=120, OpType=ALLREDUCE, NumelIn=1000, NumelOut=1000, Timeout(ms)=600000) ran for "
           "600031 milliseconds before timing out.")
    p = tmp_path / "console.log"
    p.write_text(bar + rec + "\n")
    assert [(r.global_rank, r.seq) for r in run(p).records] == [(3, 120)]


# torchrun's failure table as ChildFailedError's message prints it (torch/distributed/elastic/multiprocessing/errors/
# __init__.py's templates): 2.x's "Failures:" then "Root Cause (first observed failure):", 1.9-1.10's "Root Cause:"
# then "Other Failures:" with "msg" rows.
_TABLE = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 60, "train.py FAILED", "-" * 60,
          "Failures:", "[1]:", "  time      : 2026-11-25_15:15:55", "  host      : node1",
          "  rank      : 3 (local_rank: 1)", "  exitcode  : -9 (pid: 1765)  (SIGKILL)", "  error_file: <N/A>",
          "  traceback : Signal 9 (SIGKILL) received by PID 1765", "-" * 60, "Root Cause (first observed failure):",
          "[0]:", "  time      : 2026-11-25_15:15:54", "  host      : node1", "  rank      : 2 (local_rank: 0)",
          "  exitcode  : -6 (pid: 1764)  (SIGABRT)", "  error_file: <N/A>",
          "  traceback : Signal 6 (SIGABRT) received by PID 1764", "=" * 60]
_OLD_TABLE = ["=" * 60, "train.py FAILED", "=" * 60, "Root Cause:", "[0]:", "  time: 2021-08-01_10:00:00",
              "  rank: 2 (local_rank: 0)", "  exitcode: -6 (pid: 1764)", "  error_file: <N/A>",
              '  msg: "Signal 6 (SIGABRT) received by PID 1764"', "=" * 60, "Other Failures:", "[1]:",
              "  time: 2021-08-01_10:00:01", "  rank: 3 (local_rank: 1)", "  exitcode: -9 (pid: 1765)",
              "  error_file: <N/A>", '  msg: "Signal 9 (SIGKILL) received by PID 1765"', "*" * 60]
# The labels collectors put before every line of a process's output, each from its documented form: a CRI log file's
# "<RFC3339Nano> <stream> <P|F> " (the kubelet's CRI logging; an offset or Z), kubectl logs --timestamps' stamp and
# --prefix's pod, pdsh's and srun -l's node or task, Ray's actor with its PID (and IP), Open MPI's --tag-output.
_LABELS = ("2026-11-23T09:40:01.123456789Z stderr F ", "2025-11-05T00:40:00.149897031+07:00 stdout F ",
           "2026-11-23T09:40:01.123456789Z ", "[pod/job-worker-1/pytorch] ", "node-017: ", "3: ",
           "(RayTrainWorker pid=5665) ", "(RayWorkerWrapper pid=4954, ip=10.7.35.246) ", "[1,0]<stderr>:")


def _entries(path) -> list[tuple]:
    return [(e.rank, e.local_rank, e.exitcode, e.pid, e.signal, e.host, e.time, e.root_cause, e.loc.line)
            for s in run(path).scans for e in s.elastic]


@pytest.mark.parametrize("label", _LABELS)
@pytest.mark.parametrize("table", [_TABLE, _OLD_TABLE], ids=["2.x", "1.9"])
def test_torchruns_failure_table_is_read_behind_a_collectors_label(table, label, tmp_path):
    """The agent's table behind the label a collector puts on each of its lines reads as the table alone: its margin
    is taken off as elsewhere, an entry's "[0]:" not mistaken for a tag, the rows' own indentation kept."""
    plain, labelled = tmp_path / "plain.log", tmp_path / "labelled.log"
    plain.write_text("\n".join(table) + "\n")
    labelled.write_text("".join(label + x + "\n" for x in table))
    want = _entries(plain)
    assert sorted((e[0], e[2], e[4], e[7]) for e in want) == [(2, -6, "SIGABRT", True), (3, -9, "SIGKILL", False)]
    assert _entries(labelled) == want
    assert _errors(labelled) == _errors(plain)


@pytest.mark.parametrize("prefix", (*PREFIXES, *_LABELS, "> ", "[2026-11-23 09:40:01] node4 | "))
@pytest.mark.parametrize("table", [_TABLE, _OLD_TABLE], ids=["2.x", "1.9"])
def test_the_unread_lines_never_quote_the_failure_tables_headers(table, prefix, tmp_path):
    """Behind a margin the table cannot be read through (a quote bar, a stamp and a host of no collector's documented
    form), the last resort for error lines of no known form still reads its headers as the table's, not as errors;
    the title ("train.py FAILED") stays such a line (but behind a logger's INFO header)."""
    p = tmp_path / "console.log"
    p.write_text("".join(prefix + x + "\n" for x in table if "Cause" in x or "Failures" in x or "FAILED" in x))
    clues = [c.text for s in run(p).scans for c in s.clues if c.kind == "unread"]
    assert all("FAILED" in c for c in clues) and (clues or "INFO" in prefix), clues
