"""Logs as people really have them: UTF-16/32 from Windows tools and exporters, NUL runs from crashed nodes."""

from __future__ import annotations

import os

import pytest
from conftest import DATA, run

from ncclcheck.evidence.encoding import is_binary, sniff
from ncclcheck.render.json_out import analysis_json

ENC = DATA / "encodings"
ORIGINAL = DATA / "failures" / "order_cycle" / "console.log"  # the real 2 x H200 console these were written from


def _records(a) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "file"} for r in analysis_json(a, per_rank=True)["per_rank"]["records"]]


@pytest.mark.parametrize(("name", "encoding"), [("powershell-utf16-bom.log", "utf-16-le"),
                                                ("utf16-no-bom.log", "utf-16-le"), ("utf32-be-bom.log", "utf-32-be")])
def test_utf16_and_utf32_read_as_the_original(name, encoding):
    """The same records, line numbers included, as the UTF-8 file they were written from; the decoding is said."""
    a = run(ENC / name)
    assert _records(a) == _records(run(ORIGINAL))
    assert [p.message for p in a.problems] == [f"{encoding.upper()} text, read as UTF-8"]
    assert sniff((ENC / name).read_bytes()[:4096]) == encoding


def _crashed(tmp_path, hole: int):
    """A log whose node died mid-write: text, a hole the file system had allocated and never written, more text."""
    raw = ORIGINAL.read_bytes()
    cut = raw.find(b"[default1]:[rank1]:")
    path = tmp_path / "rank1.log"
    with open(path, "wb") as f:
        f.write(raw[:cut])
    os.truncate(path, cut + hole)  # the hole reads back as NUL bytes
    with open(path, "ab") as f:
        f.write(raw[cut:])
    return path, raw


@pytest.mark.parametrize("hole", [1, 4096, 3 << 20])
def test_nul_runs_are_read_around(tmp_path, hole):
    """Every record on both sides of the NUL run is found, at its own line, and the skipped bytes are reported."""
    path, raw = _crashed(tmp_path, hole)
    a = run(path)
    assert _records(a) == _records(run(ORIGINAL))
    [problem] = a.problems
    assert problem.message.startswith(f"{hole:,} NUL bytes skipped") and not problem.fatal
    assert f"the first at byte {raw.find(b'[default1]:[rank1]:'):,}" in problem.message


def test_binary_is_still_binary():
    """A PNG has NULs and is not text once they are set aside: refused with the reason."""
    from ncclcheck.evidence.reader import InputError, Source, read_lines

    src = DATA.parent.parent / "docs" / "report-tp_straggler.png"
    with pytest.raises(InputError, match="binary file"):
        list(read_lines(Source(str(src), str(src)), lambda _: None))
    assert is_binary(src.read_bytes()[:8192].replace(b"\x00", b""))
    assert not is_binary(b"")
