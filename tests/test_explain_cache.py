"""The table cache: a second explain of the same config reads the table back (no torch imported), a changed config
or version misses, a corrupt entry is one line on stderr and is rebuilt, and the cache can be turned off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.explain import cache, frommodel
from ncclcheck.explain.frommodel import installed
from ncclcheck.explain.params import Param
from ncclcheck.explain.table import Table

TRUTH = Path(__file__).parent / "data" / "explain" / "truth"
ARGS = ["--numel", "17304696", "--op", "ALLREDUCE", "--json"]

needs_hf = pytest.mark.skipif(installed("transformers") is None or installed("torch") is None,
                              reason="transformers and torch are not installed (make test installs both)")


def _config(tmp_path: Path, **changes: object) -> Path:
    cfg = json.loads((TRUTH / "ddp-llama-w2.json").read_text())["config"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**cfg, **changes}))
    return path


def _entries() -> list[Path]:
    return sorted(Path(os.environ["NCCLCHECK_CACHE_DIR"]).rglob("*.json"))


def _explain(*args: str) -> tuple[dict, str]:
    r = CliRunner().invoke(app, ["explain", *args])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def _no_build(*_a: object, **_k: object) -> Table:
    raise AssertionError("the table was built although the cache holds it")


def test_an_entry_reads_back_as_the_same_table():
    table = Table((Param("w", (3, 4), "bfloat16"), Param("b", (4,), trainable=False)), (Param("inv", (2,)),),
                  ("layers.0",), ("w",), (("layers.*.mlp", "colwise"),), "w", "transformers", "src", ("a note",),
                  "observed: how")
    cache.store("ab" * 32, table)
    assert cache.load("ab" * 32) == (table, None)


@needs_hf
def test_a_miss_builds_and_keeps_the_table_and_a_hit_reads_it_back(tmp_path, monkeypatch):
    cfg = _config(tmp_path)
    first, err = _explain("--config", str(cfg), *ARGS)
    assert err == "" and len(_entries()) == 1
    monkeypatch.setattr(frommodel, "table_from_config", _no_build)
    again, err = _explain("--config", str(cfg), *ARGS)
    assert err == "" and again == first


@needs_hf
def test_another_config_or_custom_code_allowed_is_another_entry(tmp_path):
    _explain("--config", str(_config(tmp_path)), *ARGS)
    _explain("--config", str(_config(tmp_path, num_hidden_layers=3)), *ARGS)
    _explain("--config", str(_config(tmp_path)), "--trust-remote-code", *ARGS)
    assert len(_entries()) == 3


def test_the_key_follows_the_config_the_installed_packages_and_the_inputs(monkeypatch):
    base = cache.key({"a": 1}, {"trust_remote_code": False})
    assert cache.key({"a": 1}, {"trust_remote_code": False}) == base
    assert cache.key({"a": 2}, {"trust_remote_code": False}) != base
    assert cache.key({"a": 1}, {"trust_remote_code": True}) != base
    monkeypatch.setattr(cache, "_install", lambda package: f"{package} 99.0")
    assert cache.key({"a": 1}, {"trust_remote_code": False}) != base


@needs_hf
@pytest.mark.parametrize("damage", [b"{not json", b"", b'{"format": 1, "key": "other", "table": {}}',
                                    b'{"format": 1, "key": "KEY", "table": {"params": [{"param": [1, 2]}]}}',
                                    b"\xff\xfe\x00"])
def test_a_corrupt_entry_is_one_line_on_stderr_and_is_built_again(tmp_path, damage):
    cfg = _config(tmp_path)
    first, _ = _explain("--config", str(cfg), *ARGS)
    (entry,) = _entries()
    entry.write_bytes(damage.replace(b"KEY", entry.stem.encode()))
    again, err = _explain("--config", str(cfg), *ARGS)
    assert again == first
    assert err.count("\n") == 1 and err.startswith(f"ncclcheck: cached table {entry} could not be read (")
    assert err.rstrip().endswith("ignored, the table is built again")
    table, note = cache.load(entry.stem)  # written again, whole
    assert table is not None and note is None


@needs_hf
def test_the_cache_turned_off_is_neither_read_nor_written(tmp_path, monkeypatch):
    cfg = _config(tmp_path)
    monkeypatch.setenv("NCCLCHECK_NO_CACHE", "1")
    _explain("--config", str(cfg), *ARGS)
    assert _entries() == []
    monkeypatch.delenv("NCCLCHECK_NO_CACHE")
    _explain("--config", str(cfg), *ARGS)
    assert len(_entries()) == 1
    monkeypatch.setattr(cache, "load", lambda digest: pytest.fail("--no-cache read the cache"))
    monkeypatch.setattr(cache, "store", lambda digest, table: pytest.fail("--no-cache wrote the cache"))
    _explain("--config", str(cfg), "--no-cache", *ARGS)


def test_the_cache_lives_under_the_users_cache_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("NCCLCHECK_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.directory() == str(tmp_path / "xdg" / "ncclcheck")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.directory() == str(tmp_path / "home" / ".cache" / "ncclcheck")


def test_an_unwritable_cache_changes_nothing_but_speed(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("NCCLCHECK_CACHE_DIR", str(blocker / "below-a-file"))
    cache.store("cd" * 32, Table((Param("w", (1,)),)))
    assert cache.load("cd" * 32) == (None, None)


@needs_hf
def test_a_hit_imports_neither_torch_nor_transformers(tmp_path):
    cfg = _config(tmp_path)
    _explain("--config", str(cfg), *ARGS)
    code = ("import sys\nfrom ncclcheck.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('IMPORTED', sorted(m for m in ('torch', 'transformers') if m in sys.modules), file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code, "explain", "--config", str(cfg), *ARGS], capture_output=True,
                       text=True, env=os.environ, check=False)
    assert r.returncode == 0 and "IMPORTED []" in r.stderr, r.stderr


def test_a_cache_folder_that_cannot_be_read_is_one_note(tmp_path, monkeypatch):
    monkeypatch.setenv("NCCLCHECK_CACHE_DIR", str(tmp_path))
    entry = tmp_path / "tables" / "ef" / ("ef" * 32 + ".json")
    entry.mkdir(parents=True)  # a folder where the entry should be
    table, note = cache.load("ef" * 32)
    assert table is None and note == f"cached table {entry} could not be read (Is a directory): ignored, the table is built again"
