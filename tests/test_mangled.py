"""Records split by a terminal's hard wrap: the wrap may fall inside a record's opening words ("Watc|hdog caught")
or right after WorkNCCL's closing parenthesis ("…=600000)|ran for …"); both are read whole.

Not yet read whole (measured by hard-wrapping every corpus excerpt at 60 to 250 columns): a wrap that splits the
`[rankN]:` prefix or the log header from its record, and one that splits a counter's digits at the end of a line.
"""

from __future__ import annotations

from conftest import run

from ncclcheck.render.json_out import record_json

FIELDS = ("rank", "global_rank", "pg", "seq", "op_type", "numel_in", "numel_out", "tensor_shape", "timeout_ms",
          "ran_for_ms", "last_enqueued", "last_completed")


def _records(path) -> list[dict]:
    return [{f: r[f] for f in FIELDS} for r in map(record_json, run(path).records)]


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
    assert (r["rank"], r["seq"], r["ran_for_ms"]) == (3, 1, 90)
