"""An action on every verdict (issue 44): what to do next, from the evidence, with why and the node at fault.

Every fixture's verdict carries one action whose reason is a documented code; each cause's action and each code of
job/actions.py's table is the one docs/json.md's table states; a bad [action] in a cause file is one error naming the
file; and a few verdicts checked by hand: an Xid drains its host and GPU, a user's exception is the code's to fix,
/dev/shm is a setting, a lost store is restarted, missing ranks are brought.
"""

from __future__ import annotations

import collections
import re
import sys
from pathlib import Path

import pytest
from analysed import analysed, report
from conftest import DATA, run

from ncclcheck.job.actions import TABLE
from ncclcheck.job.causedata import ACTIONS, DRAIN_NODE, CatalogueError, read_cause
from ncclcheck.job.causes import ALL_CAUSES, cause
from ncclcheck.render.json_out import analysis_json

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import golden  # noqa: E402  (every fixture input, as tools/golden.py reads them; never the blind set)

JSON_MD = ROOT / "docs" / "json.md"
ROW = re.compile(r"^\| [^|]* \| `(\w+)` \| `([\w-]+)` \| [^|]+ \|$", re.M)
CODES = {c.kind for c in ALL_CAUSES} | set(TABLE)


def _documented() -> dict[str, str]:
    text = JSON_MD.read_text().split("\n## 7\n", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in ROW.findall(text) if r != ("reason", "kind")]  # the header row
    assert len(rows) == len(dict(rows)), "a reason documented twice"
    return dict(rows)


def test_every_reason_and_action_is_the_one_docs_json_states():
    """docs/json.md's table under 7 is the code's: each cause's action from its file, each code of the table."""
    code = {c.kind: c.action for c in ALL_CAUSES} | {reason: kind for reason, (kind, _) in TABLE.items()}
    assert _documented() == code
    assert not {c.kind for c in ALL_CAUSES} & set(TABLE), "a table code is also a cause's kind"


def test_every_cause_file_states_its_action_and_why():
    for c in ALL_CAUSES:
        assert c.action in ACTIONS and c.action_why.strip(), c.kind


@pytest.mark.parametrize(("old", "new", "problem"), [
    ("class = 'fix-code'", "class = 'reboot'", "[action] class: 'reboot' is none of fix-code"),
    ("[action]\nclass = 'fix-code'\n", "[action]\n", "[action]: missing class"),
    ("class = 'fix-code'", "class = 'fix-code'\nnode = true", "[action]: unknown key 'node'"),
], ids=["unknown-class", "missing-class", "unknown-key"])
def test_a_bad_action_is_one_clear_error_naming_the_file(tmp_path, old, new, problem):
    good = ROOT / "ncclcheck" / "job" / "catalogue" / "cuda_oom.toml"
    text = good.read_text()
    assert old in text
    path = tmp_path / "cuda_oom.toml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(CatalogueError) as e:
        read_cause(path)
    assert str(e.value).startswith(str(path)) and problem in str(e.value)


def test_a_cause_file_without_an_action_is_refused(tmp_path):
    good = ROOT / "ncclcheck" / "job" / "catalogue" / "cuda_oom.toml"
    text = good.read_text()
    path = tmp_path / "cuda_oom.toml"
    path.write_text(re.sub(r"\[action\]\nclass = .*\nwhy = .*\n", "", text, count=1))
    with pytest.raises(CatalogueError, match="missing action"):
        read_cause(path)


def test_every_fixture_verdict_has_one_action():
    """Every input under tests/data (the blind set excepted) and the bundled example: one action, a documented
    reason, the why in words, a node exactly where a node is to be drained, and never a restart where a culprit's
    own code raised."""
    seen: collections.Counter[str] = collections.Counter()
    # Backwards: the properties parametrized over the fixtures (test_partition, test_no_unknowns) take them in golden
    # order in the other xdist worker, so that the two meet in the middle, each analysing half, rather than analysing
    # the same fixture side by side (tests/analysed.py shares only a finished analysis).
    for path in reversed(golden.inputs()):
        assert not any(part.startswith(golden.BLIND) for part in path.parts)
        a = analysed(path)  # run(path), shared with the other properties of every fixture (tests/analysed.py)
        act = a.verdict.action
        where = path.relative_to(ROOT)
        assert act is not None, where
        assert act.kind in ACTIONS and act.reason in CODES, (where, act)
        assert act.why and not re.search(r"[{}]|\bNone\b|ranks none", act.words()), (where, act.words())
        assert (act.node is not None) is (act.kind == DRAIN_NODE), (where, act)
        if act.reason in {c.kind for c in ALL_CAUSES}:
            assert a.verdict.cause is not None and act.reason == a.verdict.cause.cause.kind, where
            assert act.kind == cause(act.reason).action, where
        raised = [s for s in a.job.ranks if s.rank in a.verdict.culprit_ranks and s.ending.kind.value == "exception"]
        assert not (raised and act.kind == "restart"), where
        j = report(path)["verdict"]["action"]
        assert j["kind"] == act.kind and j["reason"] == act.reason and j["why"] == act.why, where
        seen[act.kind] += 1
    assert set(seen) == set(ACTIONS), seen  # every class is reached by some fixture


def test_an_xid_drains_the_host_and_names_its_gpu():
    """The kernel's Xid 79 on node-7's GPU 0000:2b:00, joined to rank 2 by its NCCL busId (tests/data/host/xid)."""
    a = run(DATA / "host" / "xid")
    act = analysis_json(a)["verdict"]["action"]
    assert (act["kind"], act["reason"]) == ("drain-node", "gpu_hardware")
    assert act["node"] == {"host": "node-7", "gpu_bus_id": "0000:2b:00", "ranks": [2]}


def test_an_xid_on_an_unnamed_host_names_its_gpu():
    """A kernel log alone (no rank, no host in its lines): the GPU by its bus, the host said to be unnamed."""
    act = run(DATA / "host" / "public" / "xid79-openkernel1151.log").verdict.action
    assert act is not None and act.kind == "drain-node" and act.node is not None
    assert (act.node.host, act.node.gpu_bus_id) == (None, "0000:2b:00")
    assert act.words().startswith("drain-node the host of GPU 0000:2b:00 (no input names it): the GPU itself")


def test_a_users_exception_is_the_codes_to_fix():
    """Rank 1 raised in the training script (tests/data/real4/exception): fix-code, never restart."""
    act = run(DATA / "real4" / "exception").verdict.action
    assert act is not None and (act.kind, act.reason, act.node) == ("fix-code", "user_exception", None)


def test_dev_shm_is_a_setting():
    act = run(DATA / "failures" / "shm").verdict.action
    assert act is not None and (act.kind, act.reason) == ("fix-config", "shm_exhausted")
    assert "/dev/shm" in act.why


def test_a_lost_store_is_restarted():
    """The store's connection failed (C10d store: recv got 0 bytes, connection closed) and nothing names a host."""
    for path in (DATA / "failures" / "node_lost", DATA / "failure_corpus" / "20-pytorch121944-store-lost.log"):
        act = run(path).verdict.action
        assert act is not None and (act.kind, act.reason) == ("restart", "store_lost"), path


def test_missing_ranks_are_brought():
    """Ranks waited for members no input names: collect-more, saying whose logs to bring."""
    act = run(DATA / "corpus" / "01-basicsr-pgid-defaultpg-three-ranks.log").verdict.action
    assert act is not None and (act.kind, act.reason) == ("collect-more", "missing_ranks")
    assert "bring the logs of the other members of the group they waited in" in act.why
    assert "kernel logs (dmesg -T)" in act.why


def test_a_busy_straggler_gets_a_longer_timeout_for_its_phase():
    """The bundled example: rank 5 was saving a checkpoint past the timeout; a setting, not the code or the node."""
    act = run(ROOT / "examples" / "incident-8rank").verdict.action
    assert act is not None and (act.kind, act.reason) == ("fix-config", "busy_rank")
