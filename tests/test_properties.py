"""Hypothesis properties of the parser."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import pytest
from conftest import CONFORMANCE, DATA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncclcheck.evidence import reader
from ncclcheck.evidence.parse import LogParser
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
    # chatter that holds anchor bytes without being anything: each hit must be dismissed, never taken
    "[rank{r}]:[W1122 04:43:56.408495730 ProcessGroupNCCL.cpp:1234] Warning: something benign happened on rank {r}",
    "W1122 04:43:56.408495 {n} socket.cpp:752] [c10d] The client socket has failed to connect to [host]:29500",
    'WARNING:root:{{"step": {s}, "workers": {r}, "network": "eth0"}} #{s}',
    "[default{r}]: 42%|####      | {s}/9000 [1:02:11<1:25:43,  1.34s/it]",
    "host:1:1 [{r}] NCCL INFO NCCL version 2.21.5+cuda12.4",
]
line = st.builds(lambda t, r, s, n: t.format(r=r, s=s, n=n), st.sampled_from(LINES), st.integers(0, 7),
                 st.integers(1, 30), st.integers(1, 10**9))
FIELDS = ("rank", "global_rank", "pg", "seq", "op_type", "numel_in", "numel_out", "timeout_ms", "ran_for_ms",
          "last_enqueued", "last_completed")


# The reader's search strategies, each forced early so that short texts exercise it: plain anchor bytes, the regex
# engine for dense misses, and on every other engine installed (reader.ENGINES) StringZilla's whole-word search.
STRATEGIES = {
    "python": {"ENGINE": "python"},
    "python-dense": {"ENGINE": "python", "DENSE_AFTER": 1, "DENSE_GAP": 1 << 30},
    **{engine: {"ENGINE": engine, "WORD_SEARCH_AFTER": 1} for engine in reader.ENGINES if engine != "python"},
}


@pytest.fixture(params=list(STRATEGIES))
def strategy(request):
    """Run the test under one of the reader's search strategies."""
    old = {k: getattr(reader, k) for k in STRATEGIES[request.param]}
    for k, v in STRATEGIES[request.param].items():
        setattr(reader, k, v)
    yield request.param
    for k, v in old.items():
        setattr(reader, k, v)


def records_of(*texts: str, fields: tuple[str, ...] = FIELDS):
    with tempfile.TemporaryDirectory() as d:
        scans = []
        for i, t in enumerate(texts):
            p = Path(d, f"part{i}.txt")
            p.write_text(t)
            scans.append(scan_source(Source(p.name, str(p))))
        return [tuple(getattr(r, f) for f in fields) for r in merge_records(scans)]


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


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(line, min_size=1, max_size=200))
def test_anchored_scan_equals_full_scan(strategy, lines):
    """Handing the parser only anchored lines (plus context) finds the same records as every line."""
    text = "\n".join(lines) + "\n"
    old = reader.HEAD
    try:
        reader.HEAD = 0  # only anchored lines and their context reach the parser
        fast = records_of(text)
        reader.HEAD, reader.FULL = old, True  # every line is parsed
        full = records_of(text)
    finally:
        reader.HEAD, reader.FULL = old, False
    assert fast == full


def _sized(max_line: int, block: int):
    """Run the reader with small limits, so that short texts exercise over-long lines and block edges."""

    class Sized:
        def __enter__(self):
            self.old = reader.MAX_LINE, reader.BLOCK
            reader.MAX_LINE, reader.BLOCK = max_line, block

        def __exit__(self, *exc):
            reader.MAX_LINE, reader.BLOCK = self.old

    return Sized()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(line, min_size=1, max_size=30), junk=st.integers(0, 6000),
       sep=st.sampled_from(["\r", "\r\n", "\n"]))
def test_records_found_whatever_the_line_length(strategy, lines, junk, sep):
    """A progress bar of any length before the records (on their physical line or not) hides none of them.

    (Not compared: the ``[rankN]:`` prefix, which the parser looks for only near the start of a physical line.)
    """
    text = "\n".join(lines) + "\n"
    bar = ("\r 42%|####  | 3781/9000 [1:02:11<1:25:43,  1.34s/it]" * (junk // 50 + 1))[:junk]
    fields = tuple(f for f in FIELDS if f != "global_rank")
    with _sized(1 << 10, 1 << 11):
        assert records_of("start\n" + bar + sep + text, fields=fields) == records_of("start\n" + text, fields=fields)


def _real_inputs() -> list[Path]:
    roots = [DATA / "real", Path(__file__).resolve().parents[1] / "examples", CONFORMANCE]
    return sorted(p for root in roots if root.is_dir() for p in root.rglob("*")
                  if p.is_file() and p.suffix != ".json" and not p.name.startswith("nccl_trace"))


def _scan_both(path: Path, head: int):
    old = reader.HEAD
    try:
        reader.HEAD = head
        fast = scan_source(Source(path.name, str(path)))
        reader.HEAD, reader.FULL = old, True
        full = scan_source(Source(path.name, str(path)))
    finally:
        reader.HEAD, reader.FULL = old, False
    return fast, full


@pytest.mark.parametrize("path", _real_inputs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_anchored_scan_equals_full_scan_on_real_logs(strategy, path):
    """On every real log kept here, the fast path yields every event a line-by-line parse yields.

    With no head at all, start-up facts are the exception: NCCL prints some with no trigger (``nranks``),
    which is why the first HEAD bytes are searched for them too.  With the head, nothing is missed.
    """
    fast, full = _scan_both(path, 0)
    assert dataclasses.replace(fast, facts=()) == dataclasses.replace(full, facts=())
    if path.stat().st_size <= reader.HEAD:
        assert _scan_both(path, reader.HEAD)[0] == full


def test_words_are_the_triggers_they_replace():
    """StringZilla's whole-word search looks for exactly what the anchor byte's check accepts."""
    for anchor, words in reader.WORDS.items():
        trigger, back = reader.TRIGGERS[anchor]
        for word in words:
            assert word[back: back + 1] == anchor and trigger.fullmatch(word), word
