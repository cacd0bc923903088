"""One time type for ordering a job's events: a stamp, seconds from the start of the year of the line's date.

A line's date is kept wherever the line has one: glog's month and day (``I1125 14:03:01.123456``), an ISO date
(``2026-11-25 14:03:01``), syslog's ``Nov 25 14:03:01`` and dmesg -T's ``[Mon Nov 25 14:03:01 2026]``. So a job
that runs past midnight orders ``I1125 23:59:58`` before ``I1126 00:00:01``, which a time of day alone cannot.

glog and syslog lines carry no year, so the calendar is a year's without the year itself (a leap year's: 29
February exists). Every event of a job is ordered in it alike; what it cannot order is a job that runs across New
Year (31 December sorts after 1 January), a limit docs/formats.md states.
"""

from __future__ import annotations

import re

DAY = 86400
_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_BEFORE = tuple(sum(_DAYS[:i]) for i in range(12))  # days of the year before each month
MONTHS = {m: i + 1 for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                          "Nov", "Dec"))}
_GLOG = re.compile(r"\[[EWIF](?P<month>\d\d)(?P<day>\d\d) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d(?:\.\d+)?)")
_ISO = re.compile(r"(?P<year>\d{4})-(?P<month>\d\d)-(?P<day>\d\d)[T ](?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d(?:[.,]\d+)?)")
_SYSLOG = re.compile(r"\b(?P<month>[A-Z][a-z]{2}) +(?P<day>\d{1,2}) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d(?:\.\d+)?)")


def stamp(month: int, day: int, hour: int, minute: int, second: float) -> float | None:
    """Seconds from the start of the year to this date and time; None for a date no calendar has."""
    if not (1 <= month <= 12 and 1 <= day <= _DAYS[month - 1]) or hour > 23 or minute > 59 or second >= 61:
        return None
    return (_BEFORE[month - 1] + day - 1) * DAY + hour * 3600 + minute * 60 + second


def glog(text: str) -> float | None:
    """The stamp of a c10/glog header (``[E1122 11:18:45.006097316 ...``), looked for in its first 300 characters."""
    m = _GLOG.search(text, 0, 300)
    return stamp(int(m["month"]), int(m["day"]), int(m["h"]), int(m["m"]), float(m["s"])) if m else None


def of_clock(clock: str) -> float | None:
    """The stamp of a host record's clock (``2026-11-25 11:37:29`` or ``Nov 25 11:37:29``); None without a date."""
    if m := _ISO.search(clock):
        return stamp(int(m["month"]), int(m["day"]), int(m["h"]), int(m["m"]), float(m["s"].replace(",", ".")))
    if (m := _SYSLOG.search(clock)) and m["month"] in MONTHS:
        return stamp(MONTHS[m["month"]], int(m["day"]), int(m["h"]), int(m["m"]), float(m["s"]))
    return None


def time_of_day(s: float) -> float:
    """Seconds since the stamp's midnight."""
    return s % DAY
