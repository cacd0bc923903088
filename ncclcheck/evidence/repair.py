"""The repair of damaged log lines, before anything is read from them.

Real logs are mangled: terminals hard-wrap a record anywhere (inside a token, inside a rank prefix), other processes'
progress bars are drawn into a line with carriage returns, colour codes and their ESC-less remnants stay behind,
collectors put their own prefix before every line, counters are cut at the line's end. This module holds what tells
a line's damage and undoes it: cleaning a physical line, squeezing whitespace out (a wrap may split any token), the
rank prefixes a wrap may cut, a collector's prefix on a continuation line. Where a record starts and ends is its
source's (evidence/formats/pgnccl.py: ``incomplete``, from the openings its patterns read); ``parse`` joins the lines
with both and reads the records out of the result.
"""

from __future__ import annotations

import re

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b|\[[0-9]{1,3}(?:;[0-9]{1,3})*m")
# A tqdm-style progress bar another process drew into this line on the same terminal: "\r" and the bar, up to its
# counts and stats ("\rEpoch 0:  45%|████▌     | 9/20 [00:03<00:04,  2.50it/s, loss=0.1]"); the line resumes after.
# Without room for a bar (tqdm's ncols=0, format_meter's ``l_bar[:-1] + r_bar[1:]``) the counts follow the percentage
# with no bar between ("\r 40% 20/50 [00:10<00:15,  2.00it/s]").
PROGRESS = re.compile(
    r"\r[^\r\n|]{0,200}?\d{1,3}%(?:\|[^|\r\n]{0,200}\|)?\s*[\d.]+[kMG]?/[\d.?]+[kMG]?(?:\s*\[[^\]\r\n]{0,200}\])?"
)
MAX_JOIN = 8  # physical lines one logical line may span
# A line that ends with a rank prefix, or inside one ("[Ra", "[PGID0PGGUID0(default_pg)Ran"): squeezed text.
PREFIX_END = re.compile(r"\[(?:PG[^\[\]]*?)?Rank-?\d+\]\Z")
OPEN_PREFIX = re.compile(r"\[(?:R|Ra|Ran|Rank-?\d*|P|PG[^\[\]]*)?")
# The end of a physical line that may be cut inside a rank prefix or right after one (raw text, last 100 chars).
OPEN_TAIL = re.compile(r"\[(?:R|Ra|Ran|Rank ?-?\d*|P|PG[^\[\]]*)?\s*\Z|Rank -?\d+\]\s*\S{0,2}\Z"
                       r"|\.(?:cc|cpp|h|hpp|cu):\d{1,6}\]\s*\Z")
# An enforce's header with nothing after it (squeezed text): gloo's EnforceNotMet (gloo/common/logging.cc) and
# caffe2's/c10's enforce word their message "[enforce fail at <file>:<line>] <condition>. <message>", always on one
# line, so a line that ends at the header's bracket was wrapped (a console's width, a copy) and its condition and
# message are on the next line.
ENFORCE_OPEN = re.compile(r"\[enforcefailat[^\[\]]{1,400}:\d{1,6}\]\Z")
BOUNDARY = " :)]|>"
PYTEST_E = re.compile(r"E {3,}")


def open_header(sq: str) -> bool:
    """True when a squeezed line ends in an error's header whose message its source always writes after it on the
    same line (:data:`ENFORCE_OPEN`): the next physical line, with no header of its own, is the rest of it."""
    return ENFORCE_OPEN.search(sq, max(0, len(sq) - 460)) is not None


def squeeze(text: str) -> str:
    """Remove all whitespace: hard wraps may split any token, so matching ignores it."""
    return "".join(text.split())


def clean(raw: bytes) -> str:
    """Decode one physical line and strip CR, progress bars written into it, ANSI colour codes and their remnants."""
    text = raw.decode("utf-8", "replace")
    if "\r" in text:
        if "%|" in text or "%" in text and ("it/s" in text or "s/it" in text):
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
        if ("%|" in part or "%" in part and ("it/s" in part or "s/it" in part)) and part.strip():
            return part.strip()
    return None


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
