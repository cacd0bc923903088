"""The cycle collector paused for a block and given back as it was (evidence/gcpause.py)."""

import gc

from ncclcheck.evidence.gcpause import paused


def test_paused_turns_the_collector_off_and_back_on():
    assert gc.isenabled()
    with paused():
        assert not gc.isenabled()
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # an inner block leaves it off for the outer one
    assert gc.isenabled()


def test_paused_leaves_a_collector_that_was_off_off():
    gc.disable()
    try:
        with paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
