"""What a rank was busy with: work of its own that may outlast a collective's timeout, and the framework it ran under.

A progress bar's description or a framework's line for evaluation, checkpoint saving, dataset preprocessing or
compiling says the rank was doing legitimate work while the others waited (the rank's last such line is kept: the
assembler, evidence/parse.py, drops it once a line says the work ended). The paths of a traceback (lines every
selection of a log keeps) name the framework, each of which sets the timeout its own way (and Lightning's start
line: evidence/formats/lightning.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.linear import then
from ncclcheck.evidence.types import Fact, Loc, Read, Who

# The words are plain substring tests before the pattern.
WORDS = ("valuat", "alidat", "aving", "heckpoint", "okeniz", "Map", "Filter", "reprocess", "ompil", "utotun",
         "canning", "eval", "Eval", "EVAL", "valid", "Valid", "test", "Test", "TEST", "redict",
         "anity")
# A phase's own word then its place in that phase (a step, a count, a bar) is that phase's progress line: RETURNN's
# "ep 1 dev eval, step 97", Lightning's "Testing DataLoader 0:  40%|" and "Sanity Checking DataLoader 0:", a tqdm
# bar described "eval" or "test" (tqdm/std.py format_meter: the description, then the percentage and "|"). The word
# alone is no phase ("model.eval()", "eval_steps=500", a test's name): its progress marker must follow it.
_PHASE_STEP = (r"\b(?:eval|valid|test(?:ing)?|predict(?:ing|ion)?|sanity checking)\b[^|\n]{0,40}?"
               r"(?:\bstep\s*[:=]?\s*\d|\d{1,3}%\||\b\d{1,9}/\d{1,9}\b)")
_BUSY = re.compile(
    r"(?i)(?P<eval>evaluat|validat|running evaluation|eval(?:uation)? loop|" + _PHASE_STEP + r")|"
    r"(?P<save>sav(?:ing|e)\b.{0,40}checkpoint|checkpoint.{0,40}(?:is about to be saved|saving)|saving model|"
    r"saving (?:to|the)\b)|"
    r"(?P<preprocess>running tokenizer|tokeniz(?:ing|ation)|\b(?:map|filter)(?: \(num_proc=\d+\))?:|grouping texts|"
    r"preprocess(?:ing)?\b|\bscanning\b[^|]{0,200}\d%\|)|"
    r"(?P<compile>compil(?:ing|e) |torch\.compile|autotun)"
)
# Where another line starts inside a progress bar's line: a launcher's tag, a rank prefix, a glog header.
GLUED_LINE = re.compile(
    r"(?<=[\]s])(?:\[[A-Za-z_]+\d+\]:|\[rank\d+\]:|[EWIF]\d{4} \d\d:|\[[EWIF][\d ][^\]]{0,60}\.(?:cpp|cc|py):\d+\]"
    r"|Traceback \(most recent call last\))"
)
BAR_AT_ZERO = re.compile(r"\b0%\|")
# Work that ended: "Checkpoint saved", a bar at 100%, the HF Trainer's metrics after an evaluation ('eval_runtime').
DONE = re.compile(r"(?i)\b(?:saved|finished|done|completed?)\b|\b100%\||eval_runtime")
_NOT_BUSY = re.compile(r"(?i)error|exception|traceback|failed|" + then(r"warning: ", r"deprecat"))
# Lower-case words one of which every match of ``_BUSY`` (``BUSY_GATE``) and of ``DONE`` (``DONE_GATE``) holds
# (tests/test_busy_gate.py holds every alternative to them). An ASCII line (the case-insensitive patterns may match
# other letters: the Kelvin sign is a k) holding none is not busy, and ends no work, without those patterns, which
# take ~0.1 ms a line: torch's checkpoint.py UserWarning, on every step of some jobs, holds one of WORDS.
BUSY_GATE = ("eval", "valid", "test", "predict", "sanity checking", "sav", "tokeniz", "map", "filter",
             "grouping texts", "preprocess", "compil", "autotun",
             "scanning")
DONE_GATE = ("saved", "finished", "done", "complete", "100%|", "eval_runtime")


def _gated(text: str, gate: tuple[str, ...]) -> bool:
    """Whether a case-insensitive pattern whose every match holds one of ``gate`` may match ``text``."""
    return not text.isascii() or any(map(text.lower().__contains__, gate))


def work_done(text: str) -> bool:
    """Whether a line says its work ended ("Checkpoint saved", a bar at 100%): then it is not what a rank is doing."""
    return _gated(text, DONE_GATE) and DONE.search(text) is not None
_FRAMEWORKS = (
    ("hf_trainer", re.compile(r"transformers[/\\](?:trainer|training_args)")),
    ("lightning", re.compile(r"lightning[/\\]")),
    ("deepspeed", re.compile(r"deepspeed[/\\]")),
    ("accelerate", re.compile(r"accelerate[/\\]")),
)


def busy_phase(text: str) -> str | None:
    """Which legitimate work a line says its rank is doing: ``eval``, ``save``, ``preprocess``, ``compile``."""
    if not any(map(text.__contains__, WORDS)) or not _gated(text, BUSY_GATE) or _NOT_BUSY.search(text):
        return None
    m = _BUSY.search(text)
    return m.lastgroup if m else None


def frameworks(who: Who, text: str, loc: Loc) -> list[Fact]:
    """The frameworks a traceback's line names by their paths."""
    return [Fact(who, "framework", name, loc) for name, pattern in _FRAMEWORKS if pattern.search(text)]


_NOBODY = Who()


class Lines:
    """One input's busy lines and tracebacks' paths, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Read]:
        said: list[Read] = [*frameworks(_NOBODY, text, loc)] if 'File "' in text else []
        if not work_done(text) and busy_phase(text) is not None:
            said.append(Fact(_NOBODY, "busy", " ".join(text.split())[:200], loc))
        return said


FORMAT = Format(
    name="busy",
    words=WORDS,
    make=Lines,
    logical=True,
    behind=(
        # a line holding one of its words (a busy phase, or an error that says it is none)
        Behind((*WORDS,), (_BUSY, _NOT_BUSY)),
    ),
    # any line: where another process's line is glued after a bar, a bar at 0 %, and work that ended
    # (``DONE``, tested for ``DONE_GATE``'s lower-case words first)
    shapes=(GLUED_LINE, BAR_AT_ZERO, DONE),
    samples=(
        Sample("Evaluating:  40%|████      | 20/50 [00:10<00:15,  2.00it/s]",
               "tqdm's bar (tqdm/std.py format_meter) under the HF Trainer's evaluation loop",
               (Fact(_NOBODY, "busy", "Evaluating: 40%|████ | 20/50 [00:10<00:15, 2.00it/s]", AT),)),
    ),
)
