"""The assembler's word tests in one pass (evidence/wordsets.py): Hyperscan's answer is the substring searches'."""

from __future__ import annotations

import pytest

from ncclcheck.evidence import formats, parse
from ncclcheck.evidence.wordsets import WordSets

LISTS = parse._WORDS.lists
# Every word alone, each source's sample lines, a line with a word at its very start and end, and none.
LINES = [w for words in LISTS for w in words] + [s.line for f in formats.FORMATS for s in f.samples] + [
    f"{LISTS[0][0]} and {LISTS[-1][-1]}", "[rank3]:node000:4003:4103 [3] NCCL INFO Channel 00/32 : 3 -> 4 via P2P/IPC",
    "", "é ünïcode ✓ " + LISTS[-1][0]]


def _substrings(text: str) -> int:
    return sum(1 << i for i, words in enumerate(LISTS) if any(w in text for w in words))


@pytest.mark.parametrize("engine", ["hyperscan", "python"])
def test_every_engine_finds_the_lists_a_line_holds(engine, monkeypatch):
    monkeypatch.setenv("NCCLCHECK_ENGINE", engine)
    sets = WordSets(LISTS)
    if engine == "hyperscan" and sets._db is None:
        pytest.skip("Hyperscan is not installed here")
    assert [sets.mask(line) for line in LINES] == [_substrings(line) for line in LINES]
    # "NCCL INFO" itself gates one source, NCCL's set-up (formats/ncclsetup.py, in an input's head): the rest of the
    # chatter line gates none
    assert sets.mask("Channel 00/32 : 0 1") == 0 and sets.mask(LISTS[2][0]) >> 2 & 1


def test_every_word_list_of_the_assembler_is_a_sources_own():
    """The lists are the registry's (the fed readers' words), then the assembler's own sources' cheap tests."""
    assert LISTS[: len(formats.FED_WORDS)] == formats.FED_WORDS
    assert set(formats.GATE) == {w for words in formats.FED_WORDS for w in words}
