"""Hostile filesystems and streams: no traceback, no hang, no silent miss.

Each case runs the real command in a child process with a time limit, so a hang fails the
test instead of stalling the suite.
"""

from __future__ import annotations

import json
import os
import pty
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

GOOD = ("[rank0]:[E1122 05:00:01.000000000 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=56731, OpType=ALLREDUCE, NumelIn=467019003, NumelOut=467019003, "
        "Timeout(ms)=600000) ran for 600053 milliseconds before timing out.\n")
ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file types")


_CACHE: list[Path] = []


@pytest.fixture(autouse=True, scope="module")
def _children_share_one_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The module's children share one cache folder (ncclcheck/cachedir.py: the reader's and the catalogue's compiled
    forms), the first child filling it: a child with an empty one (each test's own, conftest.py) compiled them anew,
    0.85 s of CPU where one that reads them takes 0.4, for 32 children. What is kept there changes no answer
    (test_startcache holds the kept patterns to the compiler's own); what these tests prove is how a hostile input is
    read, and a cache the first child wrote is what every later run of a user reads."""
    _CACHE[:] = [tmp_path_factory.mktemp("hostile-cache")]


def ncclcheck(*args: str, stdin=subprocess.DEVNULL, input: bytes | None = None, shell: str | None = None,
              timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``python -m ncclcheck analyze-log ARGS`` (or a bash line using $NCCLCHECK) in a child process."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", "PYTHONPATH": str(ROOT),
           "NCCLCHECK": f"{sys.executable} -m ncclcheck", "NCCLCHECK_CACHE_DIR": str(_CACHE[0])}
    cmd = ["bash", "-c", shell] if shell else [sys.executable, "-m", "ncclcheck", "analyze-log", *args]
    kw = {"input": input} if input is not None else {"stdin": stdin}
    r = subprocess.run(cmd, capture_output=True, timeout=timeout, env=env, **kw)
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(), r.stderr.decode())


def no_traceback(r: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in r.stderr, r.stderr
    for line in r.stderr.splitlines():
        assert line.startswith("ncclcheck: "), line


def seqs(r: subprocess.CompletedProcess[str]) -> list[int]:
    return [rec["seq"] for rec in json.loads(r.stdout)["per_rank"]["records"]]


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    d = tmp_path / "logs"
    d.mkdir()
    (d / "rank0.log").write_text(GOOD)
    return d


# ---------------------------------------------------------------- links
def test_dangling_symlink_in_folder_is_skipped(logs):
    (logs / "rank1.log").symlink_to(logs / "gone.log")
    r = ncclcheck(str(logs), "--json", "--per-rank")
    no_traceback(r)
    assert r.returncode == 1
    assert f"ncclcheck: {logs / 'rank1.log'}: broken symbolic link (to {logs / 'gone.log'}), skipped\n" in r.stderr
    assert seqs(r) == [56731]


def test_symlink_loop_in_folder_is_skipped(logs):
    (logs / "loop.log").symlink_to(logs / "loop.log")
    (logs / "a.log").symlink_to(logs / "b.log")
    (logs / "b.log").symlink_to(logs / "a.log")
    r = ncclcheck(str(logs), "--json", "--per-rank")
    no_traceback(r)
    assert r.returncode == 1
    for name in ("a.log", "b.log", "loop.log"):
        assert f"ncclcheck: {logs / name}: symbolic link loop, skipped\n" in r.stderr
    assert seqs(r) == [56731]


def test_directory_link_cycle_is_walked_once(logs):
    sub = logs / "node1"
    sub.mkdir()
    (sub / "rank1.log").write_text(GOOD.replace("rank0", "rank1").replace("Rank 0", "Rank 1"))
    (sub / "up").symlink_to(logs, target_is_directory=True)
    (logs / "again").symlink_to(sub, target_is_directory=True)
    r = ncclcheck(str(logs), "--json", "--per-rank")
    no_traceback(r)
    files = [i["file"] for i in json.loads(r.stdout)["per_rank"]["inputs"]]
    assert sorted(os.path.realpath(f) for f in files) == sorted(
        os.path.realpath(p) for p in (logs / "rank0.log", sub / "rank1.log"))


def test_link_to_a_log_elsewhere_is_read(logs, tmp_path):
    other = tmp_path / "elsewhere.log"
    other.write_text(GOOD.replace("SeqNum=56731", "SeqNum=7"))
    (logs / "rank1.log").symlink_to(other)
    r = ncclcheck(str(logs), "--json", "--per-rank")
    assert sorted(seqs(r)) == [7, 56731]


def test_dangling_symlink_named_directly(tmp_path):
    link = tmp_path / "rank0.log"
    link.symlink_to(tmp_path / "gone.log")
    r = ncclcheck(str(link))
    no_traceback(r)
    assert r.returncode == 3
    assert r.stderr == (f"ncclcheck: {link}: broken symbolic link (to {tmp_path / 'gone.log'})\n"
                        "ncclcheck: no readable input\n")


def test_symlink_loop_named_directly(tmp_path):
    link = tmp_path / "loop.log"
    link.symlink_to(link)
    r = ncclcheck(str(link))
    no_traceback(r)
    assert (r.returncode, r.stderr) == (3, f"ncclcheck: {link}: symbolic link loop\nncclcheck: no readable input\n")


# ---------------------------------------------------------------- FIFOs, sockets, devices
def test_fifo_in_folder_is_skipped_not_waited_on(logs):
    pipe = logs / "nccl_trace_rank_0.pipe"  # PyTorch's dump-on-demand pipe sits next to the dumps
    os.mkfifo(pipe)
    r = ncclcheck(str(logs), "--json", "--per-rank", timeout=30)
    no_traceback(r)
    assert r.returncode == 1
    assert f"ncclcheck: {pipe}: is a FIFO (named pipe), skipped\n" in r.stderr
    assert seqs(r) == [56731]


def test_fifo_matched_by_a_glob_is_skipped(logs):
    os.mkfifo(logs / "rank1.log")
    r = ncclcheck(str(logs / "*.log"), "--json", "--per-rank", timeout=30)
    no_traceback(r)
    assert f"ncclcheck: {logs / 'rank1.log'}: is a FIFO (named pipe), skipped\n" in r.stderr
    assert seqs(r) == [56731]


def test_fifo_named_directly_is_read_as_a_stream(tmp_path):
    pipe = tmp_path / "rank0.log"
    os.mkfifo(pipe)

    def writer() -> None:
        with open(pipe, "w") as f:
            f.write("some chatter\n" * 1000 + GOOD)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    r = ncclcheck(str(pipe), "--json", "--per-rank", timeout=30)
    t.join(5)
    no_traceback(r)
    assert r.returncode == 1
    assert seqs(r) == [56731]
    assert json.loads(r.stdout)["per_rank"]["inputs"][0]["lines"] == 1001


def test_socket_in_folder_and_named_directly(logs):
    path = logs / "agent.sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        r = ncclcheck(str(logs), "--json", "--per-rank", timeout=30)
        assert f"ncclcheck: {path}: is a socket, skipped\n" in r.stderr
        assert seqs(r) == [56731]
        r = ncclcheck(str(path), timeout=30)
    no_traceback(r)
    assert (r.returncode, r.stderr) == (3, f"ncclcheck: {path}: is a socket, not a log\nncclcheck: no readable input\n")


def test_device_in_folder_is_skipped(logs):
    (logs / "null.log").symlink_to("/dev/null")
    (logs / "zero.log").symlink_to("/dev/zero")
    r = ncclcheck(str(logs), "--json", "--per-rank", timeout=30)
    no_traceback(r)
    assert f"ncclcheck: {logs / 'zero.log'}: is a character device, skipped\n" in r.stderr
    assert seqs(r) == [56731]


def test_endless_device_named_directly_ends(tmp_path):
    r = ncclcheck("/dev/zero", timeout=30)
    no_traceback(r)
    assert r.returncode == 3
    assert "ncclcheck: /dev/zero: nothing but NUL bytes in its first 64 MiB (a zeroed file or device), skipped\n" in r.stderr


# ---------------------------------------------------------------- pipes
def test_process_substitution(logs):
    r = ncclcheck(shell=f"$NCCLCHECK analyze-log <(cat {logs / 'rank0.log'}) --json --per-rank", timeout=30)
    no_traceback(r)
    assert r.returncode == 1
    assert seqs(r) == [56731]


def test_process_substitution_of_gzip(logs, tmp_path):
    import gzip

    gz = tmp_path / "rank0.log.gz"
    gz.write_bytes(gzip.compress(GOOD.encode() * 3))
    r = ncclcheck(shell=f"$NCCLCHECK analyze-log <(cat {gz}) --json --per-rank", timeout=30)
    no_traceback(r)
    assert seqs(r) == [56731]


def test_dev_stdin_from_a_pipe(logs):
    r = ncclcheck(shell=f"cat {logs / 'rank0.log'} | $NCCLCHECK analyze-log /dev/stdin --json --per-rank", timeout=30)
    no_traceback(r)
    assert r.returncode == 1
    assert seqs(r) == [56731]


def test_stdin_and_a_large_folder_together(tmp_path, logs):
    """A stream among inputs big enough for worker processes is still read (in the main process)."""
    big = tmp_path / "big"
    big.mkdir()
    filler = ("x" * 99 + "\n").encode() * 360_000  # 2 x 36 MB: over the size where worker processes take over
    for r in (1, 2):
        (big / f"rank{r}.log").write_bytes(filler + GOOD.replace("rank0", f"rank{r}").encode())
    r = ncclcheck(str(big), "-", "--json", "--per-rank", input=(logs / "rank0.log").read_bytes(), timeout=120)
    no_traceback(r)
    assert {rec["file"] for rec in json.loads(r.stdout)["per_rank"]["records"]} == {
        "<stdin>", str(big / "rank1.log"), str(big / "rank2.log")}


def test_dump_through_a_pipe(tmp_path):
    real = ROOT / "tests" / "data" / "real" / "mismatch" / "dumps" / "nccl_trace_rank_0"
    r = ncclcheck(shell=f"$NCCLCHECK analyze-log <(cat {real}) --json --per-rank", timeout=30)
    no_traceback(r)
    assert json.loads(r.stdout)["per_rank"]["dumps"]


# ---------------------------------------------------------------- huge lines
# VmHWM, not ru_maxrss: the latter carries over the high-water mark of the process that forked the child.
PEAK = ("import atexit, re, sys; out = sys.argv.pop(1); "
        "atexit.register(lambda: open(out, \"w\").write(re.search(r\"VmHWM:\\s*(\\d+)\", "
        "open(\"/proc/self/status\").read())[1])); "
        "from ncclcheck.cli import main; main()")


def progress_line(size: int) -> bytes:
    bar = b"\r 42%|####      | 3781/9000 [1:02:11<1:25:43,  1.34s/it]"
    return bar * (size // len(bar))


def test_record_after_a_huge_carriage_return_line_is_found_in_bounded_memory(tmp_path):
    f = tmp_path / "rank0.log"
    with open(f, "wb") as out:
        out.write(b"start\n")
        for _ in range(12):
            out.write(progress_line(8 << 20))
        out.write(b"\r" + GOOD.encode() + b"next line\n")
    rss = tmp_path / "maxrss"
    r = ncclcheck(shell=f"{sys.executable} -c '{PEAK}' {rss} analyze-log {f} --json --per-rank", timeout=120)
    no_traceback(r)
    assert r.returncode == 1
    assert r.stderr == f"ncclcheck: {f}: line 2 is longer than 1 MiB; it is read in pieces split at its carriage returns\n"
    rec = json.loads(r.stdout)["per_rank"]["records"][0]
    assert (rec["seq"], rec["line"]) == (56731, 2)
    assert json.loads(r.stdout)["per_rank"]["inputs"][0]["lines"] == 3
    if sys.platform == "linux":
        assert int(rss.read_text()) < 90 << 10  # KiB: far less than the 96 MiB line


def test_record_after_a_long_line_that_fits_one_block(tmp_path):
    """Lines between 1 MiB and the block size get the same treatment and the same warning."""
    f = tmp_path / "rank0.log"
    f.write_bytes(progress_line(3 << 19) + b"\r" + GOOD.encode())
    r = ncclcheck(str(f), "--json", "--per-rank", timeout=60)
    no_traceback(r)
    assert seqs(r) == [56731]
    assert "line 1 is longer than 1 MiB; it is read in pieces split at its carriage returns" in r.stderr


def test_huge_line_in_a_compressed_log(tmp_path):
    import gzip

    f = tmp_path / "rank0.log.gz"
    f.write_bytes(gzip.compress(b"start\n" + progress_line(5 << 20) + b"\r" + GOOD.encode() + b"end\n", 1))
    r = ncclcheck(str(f), "--json", "--per-rank", timeout=60)
    no_traceback(r)
    assert seqs(r) == [56731]
    assert json.loads(r.stdout)["per_rank"]["inputs"][0]["lines"] == 3


def test_huge_line_through_a_pipe(tmp_path):
    f = tmp_path / "rank0.log"
    f.write_bytes(progress_line(20 << 20) + b"\r" + GOOD.encode())
    r = ncclcheck(shell=f"cat {f} | $NCCLCHECK analyze-log - --json --per-rank", timeout=60)
    no_traceback(r)
    assert seqs(r) == [56731]


# ---------------------------------------------------------------- empty streams and terminals
def test_empty_file_is_no_input(tmp_path):
    f = tmp_path / "rank0.log"
    f.write_bytes(b"")
    r = ncclcheck(str(f))
    no_traceback(r)
    assert (r.returncode, r.stdout) == (3, "")
    assert r.stderr == (f"ncclcheck: {f}: empty input (no log lines)\n"
                        "ncclcheck: no log lines: every input was empty\n")


def test_nothing_piped_is_no_input():
    r = ncclcheck("-", "--json", input=b"")
    no_traceback(r)
    out = json.loads(r.stdout)  # --json always prints its object: the problem, and no verdict
    assert (r.returncode, out["verdict"], out["problems"]) == (
        3, None, [{"file": "<stdin>", "message": "empty input (no log lines)", "fatal": False}])
    assert r.stderr == "ncclcheck: <stdin>: empty input (no log lines)\nncclcheck: no log lines: every input was empty\n"


def test_empty_process_substitution_is_no_input():
    r = ncclcheck(shell="$NCCLCHECK analyze-log <(true)")
    no_traceback(r)
    assert r.returncode == 3
    assert "empty input (no log lines)" in r.stderr


def test_folder_of_empty_files_is_no_input(tmp_path):
    for name in ("stdout.log", "stderr.log"):
        (tmp_path / name).write_bytes(b"")
    r = ncclcheck(str(tmp_path))
    assert (r.returncode, r.stderr) == (3, "ncclcheck: no log lines: every input was empty\n")


def test_empty_file_matched_by_a_glob_is_reported(logs):
    (logs / "rank1.log").write_bytes(b"")
    r = ncclcheck(str(logs / "*.log"), "--json", "--per-rank")
    assert r.returncode == 1
    assert r.stderr == f"ncclcheck: {logs / 'rank1.log'}: empty input (no log lines)\n"


def test_empty_input_beside_a_good_one(tmp_path, logs):
    empty = tmp_path / "rank1.log"
    empty.write_bytes(b"")
    r = ncclcheck(str(empty), str(logs / "rank0.log"), "--json", "--per-rank")
    assert r.returncode == 1
    assert r.stderr == f"ncclcheck: {empty}: empty input (no log lines)\n"


def terminal() -> tuple[int, int]:
    try:
        return pty.openpty()
    except OSError as exc:  # a sandbox without /dev/ptmx
        pytest.skip(f"no pseudo-terminal: {exc}")


def test_stdin_on_a_terminal_is_refused_at_once():
    leader, follower = terminal()
    try:
        r = ncclcheck("-", stdin=follower, timeout=30)
    finally:
        os.close(leader)
        os.close(follower)
    no_traceback(r)
    assert r.returncode == 3
    assert r.stderr.startswith("ncclcheck: <stdin>: standard input is a terminal; pipe a log into it")


def test_terminal_named_as_a_file_is_refused():
    leader, follower = terminal()
    try:
        r = ncclcheck(os.ttyname(follower), timeout=30)
    finally:
        os.close(leader)
        os.close(follower)
    no_traceback(r)
    assert r.returncode == 3
    assert "is a terminal; pipe a log into it" in r.stderr
