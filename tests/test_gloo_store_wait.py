"""gloo's rendezvous store giving up on the keys the other processes write at their rendezvous (gloo's own stores and
Horovod's, every release's words): a set-up failure whose fix checks every process started and raises the rendezvous
timeout; the process that timed out only waited and is no culprit (job/statements.toml `gloo_store_wait_timeout`).
Written from the formats: tests/data/stated_formats/gloo_store_wait.log (README there)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_text

from ncclcheck.job.statements import told

WRITTEN = (Path(__file__).parent / "data" / "stated_formats" / "gloo_store_wait.log").read_text().splitlines()


@pytest.mark.parametrize("pair", [WRITTEN[0:2], WRITTEN[2:4]])
def test_a_rendezvous_store_timeout_is_a_setup_failure_with_no_culprit(pair):
    """gloo's store's words and Horovod 0.21+'s, as the terminate handler prints them on a ranked line: a set-up
    failure, no culprit (the rank only waited), steps naming Horovod's timeout option and every process's start."""
    v = run_text("\n".join(pair) + "\n").verdict
    steps = " ".join(v.next_steps)
    assert (v.kind.value, v.culprit_ranks) == ("setup_failure", ())
    assert "--gloo-timeout-seconds" in steps and "HOROVOD_GLOO_TIMEOUT_SECONDS" in steps and "started" in steps


@pytest.mark.parametrize("line", [
    "torch.distributed.DistStoreError: wait timeout after 4000ms, keys: /default_pg/0//eval_done",  # c10d's TCPStore
    "RuntimeError: Socket Timeout",  # c10d before 2.2
])
def test_c10ds_store_waits_are_not_glooss(line):
    """PyTorch's own store's wait is its catalogue's (store_wait, store_unreachable), not gloo's store's."""
    said = told(line)
    assert said is None or said.id != "gloo_store_wait_timeout"


@pytest.mark.parametrize("tag", ["[1]<stderr>:", "[1,1]<stderr>:", "[rank1]:"])
def test_the_terminate_handlers_message_is_read_behind_each_launchers_tag(tag):
    """The what() line behind horovodrun's gloo tag and Open MPI's --tag-output tag, as behind torchrun's: the
    message is the reason (formats/cxx.py), not the bare terminate line."""
    pair = [tag + line.split(":", 1)[1] for line in WRITTEN[0:2]]
    v = run_text("\n".join(pair) + "\n").verdict
    assert (v.kind.value, v.culprit_ranks) == ("setup_failure", ())
