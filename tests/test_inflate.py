"""Decompression with limits, the same rule for every compressed input: a bomb stops with one line naming the
file; a real compressed log, however large, is read to its end."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import tarfile

import pytest
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.evidence import inflate

TIMEOUT = ("[rank0]:[E1125 23:59:59.000000000 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, "
           "Timeout(ms)=600000) ran for 600053 milliseconds before timing out.\n")


def _bomb(head: bytes = b"", mib: int = 96) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9, mtime=0) as g:
        g.write(head)
        zeros = bytes(16 << 20)
        for _ in range(mib // 16):
            g.write(zeros)
    return out.getvalue()


def _analyze(*paths) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, ["analyze-log", *map(str, paths), "--json"])
    return r.exit_code, r.stdout, r.stderr


@pytest.mark.parametrize("name", ["rank1.log.gz", "rank1.log"])
def test_a_gzip_bomb_as_a_log_stops_with_one_line_naming_it(tmp_path, name):
    (tmp_path / name).write_bytes(_bomb(b"hello\n"))
    (tmp_path / "rank0.log").write_text(TIMEOUT)
    code, out, err = _analyze(tmp_path / name, tmp_path / "rank0.log")
    said = [ln for ln in err.splitlines() if "compression bomb" in ln]
    assert len(said) == 1 and name in said[0] and "more than 500 times its size" in said[0]
    assert json.loads(out)["verdict"]["kind"] != "no_failure"  # the other input still read


def test_a_gzip_bomb_as_node_evidence_stops_with_one_line(tmp_path):
    bomb = tmp_path / "node3.evidence.json.gz"
    bomb.write_bytes(_bomb(b'{"ncclcheck_evidence": 1, "x": "'))
    (tmp_path / "rank0.log").write_text(TIMEOUT)
    code, out, err = _analyze(bomb, tmp_path / "rank0.log")
    said = [ln for ln in err.splitlines() if "node3.evidence.json.gz" in ln]
    assert len(said) == 1 and "compression bomb" in said[0]


def test_a_snapshot_archive_bomb_stops(tmp_path):
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        info = tarfile.TarInfo("junk")
        info.size = 96 << 20
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    (tmp_path / "snap.tar.gz").write_bytes(gzip.compress(data.getvalue(), 9))
    code, out, err = _analyze(tmp_path / "snap.tar.gz")
    assert "snap.tar.gz" in err and "compression bomb" in err


@pytest.mark.parametrize("pack", [gzip.compress, bz2.compress, lzma.compress])
def test_every_format_has_the_same_rule(pack):
    data = pack(bytes(48 << 20))
    stream = inflate.bounded(io.BytesIO(data), data[:6])
    assert stream is not None
    with pytest.raises(inflate.InflateLimit, match="more than 500 times"):
        while stream.read(1 << 20):
            pass


def test_a_large_real_compressed_log_is_read_to_its_end(tmp_path):
    """40 MiB of training output (gzip 9:1, past the 32 MiB read freely) and a timeout on its last line."""
    line = "step {:>7} | loss 2.{:04d} | lr 3.0e-04 | grad_norm 0.8{:03d} | tokens/s 184{:03d} | rank 0\n"
    body = "".join(line.format(i, i % 10000, i % 997, i % 991) for i in range((40 << 20) // 80))
    (tmp_path / "rank0.log.gz").write_bytes(gzip.compress((body + TIMEOUT).encode(), 1))
    code, out, err = _analyze(tmp_path / "rank0.log.gz")
    assert "compression bomb" not in err
    assert json.loads(out)["records"][0]["seq"] == 12
