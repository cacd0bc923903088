"""The cause files (ncclcheck/job/catalogue/*.toml): read and checked on load, the page generated from them, and
matching over typed events.

Each cause's example lines are read as that cause deep in a long log by tests/test_keep.py, from these same files.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ncclcheck.evidence.types import FileScan, Loc, Mismatch, SystemEvent, Who
from ncclcheck.job import causedata
from ncclcheck.job.causedata import FOLDER, CatalogueError, read_catalogue, read_cause
from ncclcheck.job.causes import ALL_CAUSES, CATALOGUE, Diagnosis
from ncclcheck.job.causes import diagnose as diagnose_job
from ncclcheck.job.facts import with_facts
from ncclcheck.job.model import Job

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import failures_page  # noqa: E402

GOOD = FOLDER / "cuda_oom.toml"


def _diagnose(scans: list[FileScan]) -> Diagnosis | None:
    """The catalogue's match over a job of these inputs alone (only its facts are read)."""
    return diagnose_job(with_facts(Job(None, (), (), (), ()), scans))


def test_the_committed_page_is_the_one_the_cause_files_give():
    """docs/failures.md below its marker is generated: edit a cause file, then run tools/failures_page.py."""
    current = failures_page.PAGE.read_text()
    assert failures_page.MARKER in current
    assert current == failures_page.page(ALL_CAUSES, current), "run: python tools/failures_page.py"


def test_every_cause_is_one_file_and_the_order_is_explicit():
    files = sorted(p.stem for p in FOLDER.glob("*.toml"))
    assert sorted(c.kind for c in ALL_CAUSES) == files
    orders = [c.order for c in CATALOGUE]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)
    # the order that matters: the device and memory errors before the NCCL and store errors they cause, a lost
    # peer last
    kinds = [c.kind for c in CATALOGUE]
    assert kinds.index("cuda_oom") < kinds.index("shm_exhausted") < kinds.index("store_lost") < kinds.index("remote_exited")
    assert kinds[-1] == "remote_exited"


def test_every_matched_cause_has_cited_examples_and_a_check():
    for c in CATALOGUE:
        assert c.examples and all(e.source.strip() for e in c.examples), c.kind
        assert c.check and c.fix and c.why, c.kind


def _broken(tmp_path: Path, old: str, new: str, name: str = "cuda_oom") -> Path:
    text = GOOD.read_text()
    assert old in text
    path = tmp_path / f"{name}.toml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(("old", "new", "problem"), [
    ("family = 'memory'", "family = 'memory'\ncolour = 'red'", "unknown key 'colour'"),
    ("title = 'CUDA out of memory'\n", "", "missing title"),
    ("'CUDA out of memory',", "'CUDA out of (memory',", "bad pattern"),
    ("order = 10", "order = 'ten'", "order must be of type int"),
], ids=["unknown-key", "missing", "bad-regex", "wrong-type"])
def test_a_bad_cause_file_is_one_clear_error_naming_it(tmp_path, old, new, problem):
    path = _broken(tmp_path, old, new)
    with pytest.raises(CatalogueError) as e:
        read_cause(path)
    assert str(e.value).startswith(str(path)) and problem in str(e.value)


def test_a_file_must_be_named_for_its_kind_and_orders_are_unique(tmp_path):
    with pytest.raises(CatalogueError, match="is not the file's name"):
        read_cause(_broken(tmp_path, "", "", name="oom"))
    folder = tmp_path / "catalogue"
    folder.mkdir()
    (folder / "cuda_oom.toml").write_text(GOOD.read_text())
    (folder / "other.toml").write_text(GOOD.read_text().replace("kind = 'cuda_oom'", "kind = 'other'"))
    with pytest.raises(CatalogueError, match="order 10 is also cuda_oom.toml's"):
        read_catalogue(folder)


def test_a_matched_cause_needs_example_lines(tmp_path):
    text = GOOD.read_text()
    path = tmp_path / "cuda_oom.toml"
    path.write_text(text[: text.index("[[example]]")])
    with pytest.raises(CatalogueError, match="example lines"):
        read_cause(path)


def test_an_unknown_record_kind_is_refused(tmp_path):
    path = _broken(tmp_path, "[match]\n", "[match]\nrecords = ['oom_kiled']\n")
    with pytest.raises(CatalogueError, match="unknown oom_kiled"):
        read_cause(path)
    assert "oom_killed" in causedata.RECORDS


# ------------------------------------------------------------------------------------------- over typed events
def _scan(**parts: object) -> FileScan:
    return FileScan(file="x.log", path_rank=None, lines=10, bytes_read=100, ranks_seen=(), **parts)


def test_a_mismatch_report_is_read_as_its_event_not_as_words():
    """TORCH_DISTRIBUTED_DEBUG=DETAIL's report, read into a Mismatch, is calls_disagree by its kind."""
    m = Mismatch(Who(global_rank=1), 1, "op=ALLREDUCE", 0, "op=BROADCAST", Loc("x.log", 7))
    d = _diagnose([_scan(mismatches=(m,))])
    assert d is not None and d.cause.kind == "calls_disagree" and d.loc == Loc("x.log", 7)


def test_a_record_is_read_by_its_kind_not_by_its_words():
    """A node's reboot (Kubernetes' ``Rebooted`` event) is a node failure by its kind, though its words name none
    of node_failure's patterns; a hung task is a finding, never a cause."""
    reboot = SystemEvent("node_failure", "kubernetes", Loc("events.txt", 3),
                         "Warning Rebooted node/gpu-7 Node gpu-7 has been rebooted, boot id: 42", host="gpu-7")
    d = _diagnose([_scan(system=(reboot,))])
    assert d is not None and d.cause.kind == "node_failure"
    hung = SystemEvent("hung_task", "kernel", Loc("dmesg", 1), "INFO: task python:12 blocked for more than 120 seconds.",
                       pid=12)
    assert _diagnose([_scan(system=(hung,))]) is None
