"""Hypothesis properties of the parser."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncclcheck.evidence import reader
from ncclcheck.evidence.logparse import LogParser
from ncclcheck.evidence.reader import Source
from ncclcheck.evidence.scan import scan_source
from ncclcheck.job.records import merge_records

LINES = [
    "[rank{r}]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={s}, OpType=ALLREDUCE, NumelIn={n}, NumelOut={n}, Timeout(ms)=600000) ran for 600061 milliseconds before timing out.",
    "[rank{r}]:[E1206 18:44:12.715588844 ProcessGroupNCCL.cpp:1664] [PG 1 Rank {r}] Exception (either an error or timeout) detected by watchdog at work: {s}, last enqueued NCCL work: {s}, last completed NCCL work: 7.",
    "[rank{r}]:[E ProcessGroupNCCL.cpp:2168] [PG ID 1 PG GUID 1 Rank {r}]  failure detected by watchdog at work sequence id: {s} PG status: last enqueued work: {s}, last completed work: -1",
    "host:1:1 [{r}] NCCL INFO Channel 00/0 : {r}[{r}] -> 1[1] via P2P/IPC",
    "host:1:1 [{r}] NCCL INFO AllReduce: opCount {s} sendbuff 0x7f count {n} datatype 7 op 0 root 0 comm 0x55 [nranks=8] stream 0x55",
    "[rank{r}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {n} bytes",
    "{{'loss': 0.{n}, 'epoch': {s}}}",
    "",
]
line = st.builds(lambda t, r, s, n: t.format(r=r, s=s, n=n), st.sampled_from(LINES), st.integers(0, 7),
                 st.integers(1, 30), st.integers(1, 10**9))
FIELDS = ("rank", "global_rank", "pg", "seq", "op_type", "numel_in", "numel_out", "timeout_ms", "ran_for_ms",
          "last_enqueued", "last_completed")


def records_of(*texts: str):
    with tempfile.TemporaryDirectory() as d:
        scans = []
        for i, t in enumerate(texts):
            p = Path(d, f"part{i}.txt")
            p.write_text(t)
            scans.append(scan_source(Source(p.name, str(p))))
        return [tuple(getattr(r, f) for f in FIELDS) for r in merge_records(scans)]


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=4000))
def test_never_raises_on_bytes(data):
    """Arbitrary bytes never crash the parser."""
    p = LogParser("x", None)
    for i, raw in enumerate(data.split(b"\n"), 1):
        p.feed(i, raw)
    p.finish(0, len(data))


@settings(max_examples=200)
@given(st.text(max_size=2000))
def test_never_raises_on_text(text):
    """Arbitrary text through the whole reader never crashes."""
    records_of(text)


@settings(max_examples=150, deadline=None)
@given(st.lists(line, min_size=1, max_size=40), st.data())
def test_split_at_any_line_boundary(lines, data):
    """Splitting one log into two files at any line boundary gives the same records."""
    cut = data.draw(st.integers(0, len(lines)))
    whole = records_of("\n".join(lines) + "\n")
    split = records_of("\n".join(lines[:cut]) + "\n", "\n".join(lines[cut:]) + "\n")
    assert whole == split


@settings(max_examples=100, deadline=None)
@given(st.lists(line, min_size=1, max_size=200))
def test_anchored_scan_equals_full_scan(lines):
    """Handing the parser only anchored lines (plus context) finds the same records as every line."""
    text = "\n".join(lines) + "\n"
    old = reader.HEAD
    try:
        reader.HEAD = 0  # only anchored lines and their context reach the parser
        fast = records_of(text)
        reader.HEAD = 1 << 30  # everything counts as "head": every line is parsed
        full = records_of(text)
    finally:
        reader.HEAD = old
    assert fast == full
