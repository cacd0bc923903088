"""The plain words that spare a line the busy patterns: every match of each pattern holds one of its gate's words.

``formats.busy.busy_phase`` and the parser's end-of-work test run case-insensitive patterns (~0.1 ms a line) only on an
ASCII line whose lower case holds a word of their gate; a gate missing a word for some alternative would silently
drop that alternative's lines, so each alternative is read here with ``re``'s own parser (as tests/test_keep.py reads
the reader's keep words).
"""

from __future__ import annotations

import pytest
from test_keep import _alternatives, _holds_word

from ncclcheck.evidence.formats import busy
from ncclcheck.evidence.formats.busy import BUSY_GATE, DONE_GATE, busy_phase

GATES = {"busy": (busy._BUSY, BUSY_GATE), "done": (busy.DONE, DONE_GATE)}


@pytest.mark.parametrize("name", sorted(GATES))
def test_every_alternative_of_a_busy_pattern_holds_a_word_of_its_gate(name):
    pattern, gate = GATES[name]
    assert all(w == w.lower() for w in gate), gate  # searched for in the line's lower case
    lost = [text for text, items in _alternatives(pattern) if not _holds_word(items, gate)]
    assert not lost, f"{name}: alternatives no gate word finds: {lost}"


@pytest.mark.parametrize(("line", "phase"), [
    ("/usr/lib/python3/site-packages/torch/utils/checkpoint.py:91: UserWarning: None of the inputs have "
     "requires_grad=True. Gradients will be None", None),
    ("Saving model checkpoint to /ckpt/checkpoint-500", "save"),
    ("Evaluating:  40%|####      | 20/50", "eval"),
    ("Saving \u212a-fold checkpoint to /ckpt", "save"),  # not ASCII (a Kelvin sign): the pattern itself decides
    ("\u017faving checkpoint to /ckpt", "save"),  # a long s, which the case-insensitive pattern takes for an s
])
def test_a_line_the_gate_passes_over_is_read_as_the_pattern_reads_it(line, phase):
    assert busy_phase(line) == phase
    assert (busy._BUSY.search(line) is not None and not busy._NOT_BUSY.search(line)) == (phase is not None)
