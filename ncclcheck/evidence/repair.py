"""The repair of damaged log lines, before anything is read from them.

Real logs are mangled: terminals hard-wrap a record anywhere (inside a token, inside a rank prefix), other processes'
progress bars are drawn into a line with carriage returns, colour codes and their ESC-less remnants stay behind,
collectors put their own prefix before every line, counters are cut at the line's end. This module holds what tells
a line's damage and undoes it: cleaning a physical line, squeezing whitespace out (a wrap may split any token), and
telling whether a logical line has reached its end or goes on on the next physical line. ``parse`` joins the
lines with these rules and reads the records out of the result.
"""

from __future__ import annotations

import re

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b|\[[0-9]{1,3}(?:;[0-9]{1,3})*m")
# A tqdm-style progress bar another process drew into this line on the same terminal: "\r" and the bar, up to its
# counts and stats ("\rEpoch 0:  45%|████▌     | 9/20 [00:03<00:04,  2.50it/s, loss=0.1]"); the line resumes after.
PROGRESS = re.compile(
    r"\r[^\r\n|]{0,200}?\d{1,3}%\|[^|\r\n]{0,200}\|\s*[\d.]+[kMG]?/[\d.?]+[kMG]?(?:\s*\[[^\]\r\n]{0,200}\])?"
)
# A line that begins a new log record; a hard-wrap continuation never looks like this.
HEADER = re.compile(
    r"(?:\[|^)rank\d+\[?\]:|\[[EWIF]\d{0,4}[ \d:.]*\S*\.(?:cpp|cc|h|hpp|py):\d+\]|^\S+:\d+:\d+ \[\d+\] |"
    r"^(?:Traceback|Exception raised from|frame #)|^[EWIF]\d{4} "
)
# Where a WorkNCCL printing ends; an async exception's message runs to the end of its first line.
WORK_DONE = re.compile(r"beforetimingout|timedoutin(?:blockingwait|calltowait)|\)\Z|raisedthefollowingasyncexception:.")
STATUS_START = re.compile(r"failuredetectedbywatchdog|detectedbywatchdogatwork|TimeoutatNCCLwork")
DUMP_START = re.compile(r"Received(?:adumpsignal|atimeoutsignal|aglobaltimeout)")
COUNTERS_DONE = re.compile(r"lastcompleted(?:NCCL)?work:-?\d+")
MISMATCH = re.compile(
    r"Detectedmismatchbetweencollectivesonranks\.Rank(\d+)isrunningcollective:"
    r"CollectiveFingerPrint\((.*?)\),butRank(\d+)isrunningcollective:CollectiveFingerPrint\((.*?)\)"
    r"(?:\.Collectivesdiffer|\Z)"
)
MISMATCH_START = re.compile(r"Detectedmismatchbetweencollectives")
# PyTorch 1.10-1.12's DETAIL check: each rank names only itself and its own fingerprint, in a message of its own.
MISMATCH_ONE = re.compile(
    r"Detectedmismatchbetweencollectivesonranks\.Rank(\d+)isrunninginconsistentcollective:"
    r"CollectiveFingerPrint\((.*)\)\Z"
)
MAX_JOIN = 8  # physical lines one logical line may span
# A line that ends with a rank prefix, or inside one ("[Ra", "[PGID0PGGUID0(default_pg)Ran"): squeezed text.
PREFIX_END = re.compile(r"\[(?:PG[^\[\]]*?)?Rank-?\d+\]\Z")
OPEN_PREFIX = re.compile(r"\[(?:R|Ra|Ran|Rank-?\d*|P|PG[^\[\]]*)?")
# The end of a physical line that may be cut inside a rank prefix or right after one (raw text, last 100 chars).
OPEN_TAIL = re.compile(r"\[(?:R|Ra|Ran|Rank ?-?\d*|P|PG[^\[\]]*)?\s*\Z|Rank -?\d+\]\s*\S{0,2}\Z")
STARTS = (
    "Watchdogcaughtcollectiveoperationtimeout:WorkNCCL(",
    "Processgroupwatchdogthreadterminatedwithexception:",
    "Exception(eitheranerrorortimeout)detectedbywatchdogatwork:",
    "failuredetectedbywatchdogatworksequenceid:",
    "TimeoutatNCCLwork:",
    "Receivedadumpsignal",
    "Detectedmismatchbetweencollectives",
)
BOUNDARY = " :)]|>"
PYTEST_E = re.compile(r"E {3,}")


def squeeze(text: str) -> str:
    """Remove all whitespace: hard wraps may split any token, so matching ignores it."""
    return "".join(text.split())


def clean(raw: bytes) -> str:
    """Decode one physical line and strip CR, progress bars written into it, ANSI colour codes and their remnants."""
    text = raw.decode("utf-8", "replace")
    if "\r" in text:
        if "%|" in text:
            text = PROGRESS.sub("", text)
        text = text.replace("\r", " ")
    if "\x1b" in text or "[0m" in text:
        text = ANSI.sub("", text)
    return text.rstrip()


def last_bar(raw: bytes) -> str | None:
    """The last state of a progress bar drawn with carriage returns (``Evaluating:  40%|####  | 20/50 [...]``), which
    :func:`clean` removes from the line: where a rank's log ends in one, it is what the rank was doing."""
    text = raw.decode("utf-8", "replace")
    for part in reversed(text.split("\r")):
        if "%|" in part and part.strip():
            return part.strip()
    return None


def cut_marker(sq: str) -> bool:
    """True when the line may end inside a record's opening: in its first words after a "[...]" prefix, right
    after a "[Rank N]" or "[PG ... Rank N]" prefix (the record follows on the next line), or inside such a prefix.

    A terminal wraps at its width wherever that falls; the next line, which carries no header, completes it.
    """
    close = sq.rfind("]")
    if sq.rfind("[") > close:
        return OPEN_PREFIX.fullmatch(sq, sq.rfind("[")) is not None
    tail = sq[close + 1:]
    if not tail:
        return PREFIX_END.search(sq) is not None
    if len(tail) < 3:
        return any(m.startswith(tail) for m in STARTS) and PREFIX_END.search(sq, 0, close + 1) is not None
    # The opening words may follow other text on the line (an exception's name, pytest's "E"): look for where
    # each opening would begin.
    for m in STARTS:
        at = tail.rfind(m[:3])
        if at != -1 and m.startswith(tail[at:]):
            return True
    return False


def unprefixed(first: str, cont: str) -> str:
    """A continuation line without the prefix a log collector put before every line (``node-3: ``, a Ray actor's
    ``(pid=…)``, a CRI timestamp): the leading text it shares with the record's first line, digits counting as
    alike, up to a space, colon or bracket."""
    n = 0
    for a, b in zip(first, cont, strict=False):
        if a != b and not (a.isdigit() and b.isdigit()):
            break
        n += 1
    while n and cont[n - 1] not in BOUNDARY:
        n -= 1
    # A collector's prefix has a digit or a mark in it, pytest's is "E" and spaces (an exception's every line); two
    # wrap pieces that merely start alike ("n for ") have neither.
    shared = cont[:n]
    marked = any(c.isdigit() or c in ":|()[]<>" for c in shared) or PYTEST_E.fullmatch(shared) is not None
    return cont[n:] if n >= 2 and marked else cont


def waits_for_digits(sq: str) -> bool:
    """A status line whose last counter ends the line: a wrap may have cut its digits ("last completed work: 2|15"),
    so a next line that starts with a digit goes on with it."""
    if not (STATUS_START.search(sq) or DUMP_START.search(sq)):
        return False
    done = COUNTERS_DONE.search(sq)
    return done is not None and done.end() == len(sq)


def incomplete(sq: str) -> bool:
    """True when a squeezed logical line started a record but has not reached its end."""
    if "WorkNCCL(" in sq:
        last = sq.rfind("WorkNCCL(")
        done = WORK_DONE.search(sq, last)
        # A watchdog's timeout always goes on to "ran for N milliseconds before timing out": a wrap right after the
        # closing parenthesis has not reached the end yet.
        if done is not None and done.group() == ")" and "atchdogcaught" in sq[:last]:
            return True
        return done is None
    if STATUS_START.search(sq) or DUMP_START.search(sq):
        return not COUNTERS_DONE.search(sq) or waits_for_digits(sq)
    if MISMATCH_START.search(sq):
        return not MISMATCH.search(sq) and not MISMATCH_ONE.search(sq)
    return cut_marker(sq)
