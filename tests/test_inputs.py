"""Bad inputs: one clear line naming the file, the rest still analysed, no traceback."""

from __future__ import annotations

import gzip
import json
import os

import pytest
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.evidence import reader

GOOD = "[rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600100 milliseconds before timing out."
runner = CliRunner()


def cli(*args: str):
    return runner.invoke(app, ["analyze-log", *args], catch_exceptions=False)


def test_missing_file_is_reported_and_others_analysed(write):
    good = write("rank0.log", GOOD)
    r = cli(str(good), "nope.log", "--quiet")
    assert r.exit_code == 1
    assert r.stderr == "ncclcheck: nope.log: no such file or directory\n"
    assert "incomplete_evidence" in r.stdout  # one rank's log alone cannot name the culprit


def test_missing_file_is_in_the_json_too(write):
    good = write("rank0.log", GOOD)
    r = cli(str(good), "nope.log", "--json", "--per-rank")
    assert json.loads(r.stdout)["problems"] == [{"file": "nope.log", "message": "no such file or directory",
                                                 "fatal": True}]


def test_no_readable_input_exits_3(tmp_path):
    r = cli(str(tmp_path / "missing.log"))
    assert (r.exit_code, r.stdout) == (3, "")
    assert r.stderr.endswith("ncclcheck: no readable input\n")


def test_empty_directory(tmp_path):
    r = cli(str(tmp_path))
    assert r.exit_code == 3
    assert f"ncclcheck: {tmp_path}: directory contains no files\n" in r.stderr


def test_binary_file(write):
    b = write("core.bin", data=b"\x7fELF\x00\x00\x01" * 100)
    good = write("rank0.log", GOOD)
    r = cli(str(b), str(good), "-q")
    assert r.exit_code == 1
    assert f"ncclcheck: {b}: binary file (not text once its NUL bytes are set aside), skipped\n" in r.stderr


def test_truncated_gzip_keeps_what_was_read(write):
    data = gzip.compress(((GOOD + "\n") + ("filler line\n" * 50000)).encode())
    g = write("rank0.log.gz", data=data[: len(data) // 2])
    r = cli(str(g), "--json", "--per-rank")
    assert r.exit_code == 1
    assert "compressed data is truncated or corrupt" in r.stderr
    assert '"seq": 3' in r.stdout


def test_empty_file(write):
    """No lines is not "nothing wrong found": exit 3, saying so."""
    e = write("empty.log", data=b"")
    r = cli(str(e))
    assert (r.exit_code, r.stdout) == (3, "")
    assert r.stderr == f"ncclcheck: {e}: empty input (no log lines)\nncclcheck: no log lines: every input was empty\n"


def test_non_utf8_bytes(write):
    f = write("rank0.log", data=b"caf\xe9 \xff\xfe\n" + GOOD.encode() + b"\n")
    r = cli(str(f), "-q")
    assert r.exit_code == 1
    assert "not UTF-8" in r.stderr


def test_huge_line_without_newline_is_bounded(write, monkeypatch):
    monkeypatch.setattr(reader, "MAX_LINE", 1 << 16)
    monkeypatch.setattr(reader, "BLOCK", 1 << 14)
    f = write("rank0.log", data=b"x" * (1 << 20) + b"\n" + GOOD.encode() + b"\n")
    r = cli(str(f), "--json", "--per-rank")
    assert r.exit_code == 1
    assert f"ncclcheck: {f}: line 1 is longer than 64 KiB; it is read in pieces split at its carriage returns\n" in r.stderr
    assert '"line": 2' in r.stdout


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read any file")
def test_permission_denied(write):
    f = write("secret.log", GOOD)
    f.chmod(0)
    r = cli(str(f))
    assert r.exit_code == 3
    assert f"ncclcheck: {f}: permission denied\n" in r.stderr


def test_stdin():
    r = runner.invoke(app, ["analyze-log", "-", "--json", "--per-rank"], input=GOOD + "\n")
    assert r.exit_code == 1
    assert '"file": "<stdin>"' in r.stdout


def test_glob(write, tmp_path):
    write("a/rank0.log", GOOD)
    r = cli(str(tmp_path / "a" / "*.log"), "-q")
    assert r.exit_code == 1


def test_hidden_folders_below_the_one_named_are_skipped_like_hidden_files(tmp_path):
    """A torchrun log dir with a stale `.hidden/stderr.log` and an editor's `.cache/`: only the job's own logs are
    read; a hidden folder named on the command line is read."""
    job = tmp_path / "job"
    for rel in ("attempt_0/0/stderr.log", ".hidden/stderr.log", "attempt_0/.cache/rank37.log", ".notes"):
        p = job / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x\n")
    found = [os.path.relpath(s.name, job) for s in reader.resolve([str(job)], lambda e: None)]
    assert found == ["attempt_0/0/stderr.log"]
    named = [os.path.relpath(s.name, job) for s in reader.resolve([str(job / ".hidden")], lambda e: None)]
    assert named == [".hidden/stderr.log"]


def test_an_unreadable_folder_is_said_once(tmp_path, monkeypatch):
    """A folder the walk cannot enter: "permission denied, skipped", not also "directory contains no files"."""
    (tmp_path / "logs").mkdir()

    def denied(top, onerror=None, followlinks=False):
        onerror(PermissionError(13, "Permission denied", str(tmp_path / "logs")))
        return iter(())

    monkeypatch.setattr(reader.os, "walk", denied)
    said = []
    assert reader.resolve([str(tmp_path / "logs")], lambda e: said.append(e.message)) == []
    assert said == ["permission denied, skipped"]
