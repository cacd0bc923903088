"""A rank's progress through a loop: ``epoch 0 batch 7/7`` as a training script prints it, a tqdm bar's ``6/7``.

Each is a count and a total of one loop, per rank: ranks whose totals differ in the same loop hold different amounts
of data (job/uneven.py). The parser keeps each rank's latest count of each loop (evidence/parse.py), as the loop's
label: the words before the count (a tqdm bar's description), digits as ``#`` so that ``rank 0 epoch 0`` and ``rank 1
epoch 0`` are one loop.

* A printed count: ``batch 7/7``, ``Batch [3/12]``, ``batch: 5 / 40`` (a script's own print; the word ``batch`` then
  the count and the total).
* tqdm's bar (tqdm/std.py ``format_meter``, its default ``l_bar{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining},
  {rate_fmt}{postfix}]``): the count and total, then the rate in ``it/s`` or ``s/it``; the description is
  ``l_bar``'s text before the percentage. Lightning's and the HF Trainer's bars are tqdm's. With ``ncols=0`` (no room
  for a bar) format_meter returns ``l_bar[:-1] + r_bar[1:]``, the same counts without the bar and its two ``|``:
  ``desc:  72% 23/32 [01:07<00:25,  2.80s/it]`` (tqdm since 2015, 367723c, to today's tqdm/std.py).

A bar of a loop whose length tqdm was not told (``total=None``: an iterable without ``len``, Lightning's sanity check
and its bars before the dataloader's length is known) has no percentage and ``?`` for its total: ``Sanity Checking:
|          | 0/? [00:00<?, ?it/s]`` (format_meter's ``{n_fmt}/{total_fmt}`` with ``total_fmt`` "?", Lightning's
``BAR_FORMAT``). It is read as a ``progress_open`` fact, ``label: i``: no total to compare across ranks, but a loop
that ran (job/ending.py's ``stalled``: a console whose last progress is a bar with no ending after it).

Lightning's RichProgressBar draws with rich, not tqdm (callbacks/progress/rich_progress.py, 1.5 on): its columns are
the description, the bar, ``{completed}/{total}`` (``--`` for a loop of no known length; 1.5-1.6 printed ``inf``),
the elapsed and remaining time (``0:00:05 • 0:02:40``, ``<`` between them in 1.5, ``-:--:--`` where unknown) and
``{speed}it/s``: ``Epoch 0/9 ━━━━━━━━━ 12/400 0:00:05 • 0:02:40 2.41it/s v_num: 0``. Read the same way, its label
the text before the bar.

A count without a total, with the rank that printed it in the line's own words, is a rank's position in a loop: how
far each rank got, compared where the log stops (job/apart.py). Read where the line names its rank, so that a count
is never a process's other number (a batch size, an id):

* a script's own print: ``Rank 1 batch 88 start``, ``rank 3 epoch 0 batch 7`` (the word ``rank`` and its number, then
  within a few words ``batch`` and its count, no total);
* DistDGL's training examples (examples/pytorch/graphsage/dist/train_dist.py and its kin): ``Part {rank} | Epoch
  {epoch:05d} | Step {step:05d} | Loss ...``, the partition of ``g.rank()`` or ``dist.get_rank()``, every
  ``log_every`` steps.

``step N/M`` is not read: nearly every line of a training log holds ``step``, and a word that gates a source makes the
block reader keep every line holding it (formats/__init__.py); the bars and ``batch`` counts cover what the loops
print per rank.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

PRINTED = re.compile(r"(?P<label>(?:[\w.-]{1,30}[ :]+){0,4}?)\b(?:batch|Batch)(?:es)?\s*[:#]?\s*\[?"
                     r"(?P<i>\d{1,9})\s*/\s*(?P<n>\d{1,9})\b")
# A tqdm bar from its percentage on; its label is the text before it (``bar_label``). A label inside the pattern, a
# lazy run of any character before ``:? *\d``, was tried at every start with every split of a line of spaces or digits:
# 367 s on 16 KiB of spaces (tests/test_linear_patterns.py found it).
# tqdm's bar fills the terminal's width left by its text (format_meter's ``ncols``): on a wide terminal it is well over
# 80 characters (300 covers a 4K-wide console).
BAR = re.compile(r"\d{1,3}%(?:\|[^|]{0,300}\|)? {0,8}(?P<i>\d{1,9})/(?P<n>\d{1,9}) \[[^\]]{0,60}?(?:it/s|s/it)")
# A bar with no total (``?``) and so no percentage: its (empty) bar between two ``|``, the count, ``/?``, the rate.
OPEN = re.compile(r"\|[^|]{0,300}\| {0,8}(?P<i>\d{1,9})/\? \[[^\]]{0,60}?(?:it/s|s/it)")
# Lightning's rich bar from its count on: the count, the total ("--" or "inf" where unknown), the times, the speed.
RICH = re.compile(r"(?P<i>\d{1,9})/(?P<n>\d{1,9}|--|inf) {1,8}(?:\d{1,3}:\d\d:\d\d|-:--:--) [•<] "
                  r"(?:\d{1,3}:\d\d:\d\d|-:--:--) {1,8}[\d.]{1,12}it/s")
_RICH_BAR = " ━╸╺-"  # its bar's characters (a terminal without Unicode draws "-"), taken off the label's end
# A count without a total in a line that names its rank: the rank's word and number, the loop's words (at most 40
# characters, digits among them: an epoch), ``batch`` and its count, not followed by a total.
COUNTED = re.compile(r"\b(?P<label>[Rr]ank[ :=#]{0,2}(?P<rank>\d{1,6})\b[^\n/]{0,40}?\b(?:batch|Batch)(?:es)?)[ :#=]{0,3}"
                     r"(?P<i>\d{1,9})\b(?!\s{0,3}/)")
DGL = re.compile(r"\bPart (?P<rank>\d{1,6}) \| Epoch (?P<e>\d{1,9}) \| Step (?P<i>\d{1,9})\b")
_BEFORE = 80  # characters of a bar's label, at most
_DIGITS = re.compile(r"\d+")
# A launcher's tag before the line (torchrun's ``[default0]:``, a ``[rank0]:`` prefix, Slurm's ``0: ``): no part of
# the loop's name.
_TAG = re.compile(r"^(?:\[[A-Za-z_]+\d+\]:?|\[rank\d+\]:?|\d+: )+")  # a bar's ``:`` is taken before it
_ANYONE = Who()  # the line's process: the parser puts the fact on it


def label(text: str) -> str:
    """A loop's name as its lines print it: ``rank # epoch #``."""
    return _DIGITS.sub("#", " ".join(_TAG.sub("", text.strip()).split()).strip(" :")) or "progress"


def bar_label(text: str, start: int) -> str:
    """A bar's description: the text before its percentage, back to the line's (or the carriage return's) start,
    at most ``_BEFORE`` characters."""
    before = text[max(0, start - _BEFORE - 2):start]
    cut = max(before.rfind("|"), before.rfind("\r"), before.rfind("\n"))
    return before[cut + 1:]


class Lines:
    """One input's progress lines, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "| Step" in text and (d := DGL.search(text)):
            return (Fact(_ANYONE, "count", f"DGL Epoch # | Step #: rank {int(d['rank'])}: {int(d['e'])}.{int(d['i'])}",
                         loc),)
        if "ank" in text and (c := COUNTED.search(text)):
            outer = [str(int(n)) for n in _DIGITS.findall(c["label"][c.end("rank") - c.start():])]  # an epoch's
            count = ".".join([*outer, str(int(c["i"]))])
            return (Fact(_ANYONE, "count", f"{label(c['label'])}: rank {int(c['rank'])}: {count}", loc),)
        if " • " in text or " < " in text:
            r = RICH.search(text) if "it/s" in text else None
            if r is not None:
                name = label(bar_label(text, r.start()).rstrip(_RICH_BAR))
                if r["n"].isdigit():
                    if int(r["n"]) > 0 and int(r["i"]) <= int(r["n"]):
                        return (Fact(_ANYONE, "progress", f"{name}: {int(r['i'])}/{int(r['n'])}", loc),)
                    return ()
                return (Fact(_ANYONE, "progress_open", f"{name}: {int(r['i'])}", loc),)
        if "/? [" in text and (o := OPEN.search(text)):
            return (Fact(_ANYONE, "progress_open", f"{label(bar_label(text, o.start()))}: {int(o['i'])}", loc),)
        m = (BAR.search(text) if ("it/s" in text or "s/it" in text) and "%" in text else None) or (
            PRINTED.search(text) if "atch" in text else None)
        if m is None or int(m["n"]) == 0 or int(m["i"]) > int(m["n"]):
            return ()
        name = label(bar_label(text, m.start())) if m.re is BAR else label(m["label"]) + " batch"
        return (Fact(_ANYONE, "progress", f"{name}: {int(m['i'])}/{int(m['n'])}", loc),)


_REC = "tests/data/launchers/torchrun/uneven"
FORMAT = Format(
    name="progress",
    words=("batch", "Batch", "it/s", "s/it", "| Step"),
    make=Lines,
    patterns=(PRINTED, BAR, OPEN, RICH, COUNTED, DGL),
    behind=(
        # a count's or a bar's label, to name its loop
        Behind((COUNTED, BAR, OPEN, RICH, PRINTED), (_DIGITS, _TAG)),
    ),
    samples=(
        Sample("[default0]:epoch 0 batch 7/7", f"{_REC}_lines_barrier/console.log:12 (tools/launchers/uneven_job.py)",
               (Fact(_ANYONE, "progress", "epoch # batch: 7/7", AT),)),
        Sample("[default1]:rank 1 epoch 0: 100%|██████████| 6/6 [00:00<00:00, 277.93it/s]",
               f"{_REC}_tqdm_barrier/console.log:19 (tools/launchers/uneven_job.py, tqdm 4.70)",
               (Fact(_ANYONE, "progress", "rank # epoch #: 6/6", AT),)),
        Sample("Epoch 0:  57%|█████▋    | 4/7 [00:01<00:00,  3.02it/s, v_num=0, train_loss=0.512]",
               "Lightning's TQDMProgressBar (its main bar's description, tqdm's format_meter with a postfix)",
               (Fact(_ANYONE, "progress", "Epoch #: 4/7", AT),)),
        Sample("Rank 1 batch 6 start", "tests/data/gloo_counters/apart/console.log:21 (tools/record41/counters_job.py)",
               (Fact(_ANYONE, "count", "Rank # batch: rank 1: 6", AT),)),
        Sample("Part 2 | Epoch 00003 | Step 00040 | Loss 1.2345 | Train Acc 0.6500 | Speed (samples/sec) 1234.5678 | "
               "GPU 123.4 MB | time 1.234 s",
               "DistDGL's examples/pytorch/graphsage/dist/train_dist.py print (its format string, a rank's values)",
               (Fact(_ANYONE, "count", "DGL Epoch # | Step #: rank 2: 3.40", AT),)),
        Sample("Sanity Checking: |          | 0/? [00:00<?, ?it/s]",
               "Lightning's TQDMProgressBar sanity-check bar before its length is known (tqdm's format_meter, total "
               "None: total_fmt '?', no percentage)",
               (Fact(_ANYONE, "progress_open", "Sanity Checking: 0", AT),)),
        Sample("Epoch 0/9  ━━━━━━━━━━━━━━╸━━━━━━━━━━━━━━━━━━━━━━ 12/400 0:00:05 • 0:02:40 2.41it/s v_num: 0",
               "Lightning's RichProgressBar (rich_progress.py: description, bar, BatchesProcessedColumn, "
               "CustomTimeColumn, ProcessingSpeedColumn)",
               (Fact(_ANYONE, "progress", "Epoch #/#: 12/400", AT),)),
        Sample("Sanity Checking DataLoader 0 ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 0/-- 0:00:00 • -:--:-- 0.00it/s",
               "Lightning's RichProgressBar, a dataloader of no known length (BatchesProcessedColumn's '--')",
               (Fact(_ANYONE, "progress_open", "Sanity Checking DataLoader #: 0", AT),)),
        Sample("Validating:  72% 23/32 [01:07<00:25,  2.80s/it]",
               "tqdm's format_meter with ncols=0 (tqdm/std.py: `l_bar[:-1] + r_bar[1:]`, no bar between the counts)",
               (Fact(_ANYONE, "progress", "Validating: 23/32", AT),)),
    ),
)
