"""Dates kept wherever the line has them: one stamp (date and time) orders every event, right across midnight."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from conftest import DATA, run

from ncclcheck.evidence import stamps

XID = DATA / "host" / "xid"


def test_glog_keeps_the_month_and_day():
    before = stamps.glog("[rank1]:[E1125 23:59:58.000000000 ProcessGroupNCCL.cpp:1600] ...")
    after = stamps.glog("[rank0]:[I1126 00:00:01.500000000 ProcessGroupNCCL.cpp:905] ...")
    assert before is not None and after is not None
    assert after - before == 3.5
    assert stamps.time_of_day(after) == 1.5
    assert stamps.glog("[E0229 10:00:00.0 x.cpp:1]") is not None  # a leap day exists in the calendar
    assert stamps.glog("[E1332 10:00:00.0 x.cpp:1]") is None  # no such date


def test_host_clocks_with_a_date_and_the_glog_stamp_agree():
    assert stamps.of_clock("Nov 25 23:59:59") == stamps.glog("[E1125 23:59:59.0 x.cpp:1]")
    assert stamps.of_clock("2026-11-26 00:00:01") == stamps.glog("[I1126 00:00:01.0 x.cpp:1]")
    assert stamps.of_clock("2026-11-26T00:00:01,250") == stamps.glog("[I1126 00:00:01.25 x.cpp:1]")
    assert stamps.of_clock("00:00:01") is None  # no date: not a stamp


def _shifted(src, dst, seconds: int) -> None:
    """A copy of a job's logs with every glog header and syslog clock moved by ``seconds``."""
    dst.mkdir()

    def glog(m: re.Match[str]) -> str:
        t = datetime(2026, int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6])) + timedelta(seconds=seconds)
        return f"[{m[1]}{t:%m%d %H:%M:%S}"

    def syslog(m: re.Match[str]) -> str:
        t = datetime.strptime(f"2026 {m[1]}", "%Y %b %d %H:%M:%S") + timedelta(seconds=seconds)
        return f"{t:%b %d %H:%M:%S}"

    for f in src.iterdir():
        text = re.sub(r"\[([EWIF])(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)", glog, f.read_text())
        text = re.sub(r"^([A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d)", syslog, text, flags=re.M)
        (dst / f.name).write_text(text)


def test_a_job_crossing_midnight_orders_its_events_by_date(tmp_path):
    """The Xid fixture moved so that the GPU falls off the bus at 23:59:59 and the watchdogs fire 41 s later, after
    midnight: still "41 s before the first timeout" (a time of day alone says the Xid came 24 hours later)."""
    late = tmp_path / "late"
    _shifted(XID, late, 4 * 3600 + 57 * 60 + 20)  # 19:02:39 -> 23:59:59
    assert "Nov 25 23:59:59" in (late / "journal-k.log").read_text()
    assert "E1126 00:00:39" in (late / "rank0.log").read_text()
    v = run(late).verdict
    assert (v.kind.value, list(v.culprit_ranks), v.cause.cause.kind) == ("rank_failed_first", [2], "gpu_hardware")
    assert "reported Xid 79 at Nov 25 23:59:59, 41 s before the first timeout" in v.summary


def test_a_records_start_stamp_is_a_date_and_time(tmp_path):
    late = tmp_path / "late"
    _shifted(XID, late, 4 * 3600 + 57 * 60 + 20)
    a = run(late)
    started = [r.started_s for r in a.records if r.started_s is not None]
    assert started and all(s > stamps.stamp(11, 25, 0, 0, 0) for s in started)
