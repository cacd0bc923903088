"""Benchmark: `ncclcheck analyze-log --json` on hostile inputs, each in a fresh process, time and memory bounded.

Cases (issue 34):
* a claimed world: `initialization options: size: 200000000`, a Slurm kill of `tasks 0-30000000`, a file named
  rank99999999999.log, an NCCL `nranks 2000000000` line: memory must follow the input, not the number in it;
* 1 MiB lines of shapes that make a backtracking pattern loop (runs of spaces, digits, colons, `Error`, `[`);
* a keep word 1000 times on one line, such a line every 64 KiB of a 16 MiB log (one span a line, not a hit);
* a gzip bomb (1 GiB of zeros, about 1 MB gzipped) named as a log and as node evidence: stopped with a one-line
  problem naming the file;
* a glog log crossing midnight (the failure before the first timeout must still be found first);
* each bare failure line placed at offsets 0, 64 KiB, 1 MiB and 8 MiB of a long ordinary training log: found or
  missed (the reader's anchors decide this; reported, not bounded).

Each run is sampled every 10 ms for its peak RSS (the command and its workers) and killed past a guard of 60 s or
2 GiB so that a regression cannot take the machine down.
Usage: python tools/bench_hostile.py [--keep DIR]   (NCCLCHECK_ROOT=DIR runs the package found there instead: a
checkout of an earlier commit, for a before/after table; HOSTILE_GUARD_S lowers the guard)
Bounds: every bounded case answers in < 5 s and < 300 MB, with no traceback. Exit 1 when one is broken.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import psutil

NCCLCHECK = [sys.executable, "-m", "ncclcheck"]
ROOT = os.environ.get("NCCLCHECK_ROOT") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_S, MAX_MB = 5.0, 300
GUARD_S, GUARD_MB = float(os.environ.get("HOSTILE_GUARD_S", 60)), 2048
MiB = 1 << 20

TIMEOUT = ("[rank0]:[E1125 23:59:59.000000000 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, "
           "Timeout(ms)=600000) ran for 600053 milliseconds before timing out.\n")
FAILURES = {
    "oom": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "79.10 GiB of which 1.06 GiB is free.",
    "illegal-access": "RuntimeError: CUDA error: an illegal memory access was encountered",
    "nccl-unhandled": "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                      "NCCLUtils.hpp:317, unhandled system error (run with NCCL_DEBUG=INFO for details), "
                      "NCCL version 2.21.5",
    "device-assert": "RuntimeError: CUDA error: device-side assert triggered",
}
FOUND_WORDS = {"oom": "out of memory", "illegal-access": "illegal memory access",
               "nccl-unhandled": "unhandled system error", "device-assert": "device-side assert"}
OFFSETS = (0, 64 << 10, 1 << 20, 8 << 20)


@dataclass
class Run:
    seconds: float
    peak: int
    rc: int
    out: str
    err: str
    killed: str = ""


def run(args: list[str]) -> Run:
    """One fresh process; wall seconds, peak summed RSS, killed past the guard."""
    env = {**os.environ, "PYTHONPATH": ROOT, "NO_COLOR": "1", "COLUMNS": "200"}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = psutil.Popen([*NCCLCHECK, *args], stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=ROOT)
        peak, killed = 0, ""
        while proc.poll() is None:
            try:
                procs = [proc, *proc.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in procs if p.is_running()))
            except psutil.NoSuchProcess:
                pass
            took = time.perf_counter() - start
            if took > GUARD_S or peak > GUARD_MB * MiB:
                killed = f"killed past the guard ({took:.0f} s, {peak / MiB:.0f} MB)"
                for p in proc.children(recursive=True):
                    p.kill()
                proc.kill()
                proc.wait()
                break
            time.sleep(0.01)
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        return Run(seconds, peak, proc.returncode, out.read().decode(errors="replace"),
                   err.read().decode(errors="replace"), killed)


def training_lines(size: int, rank: int = 3) -> bytes:
    """Ordinary training output (steps, losses, throughput), about ``size`` bytes, no anchor of a failure."""
    line = (f"step {{:>7}} | loss 2.{{:04d}} | lr 3.0e-04 | grad_norm 0.8{{:03d}} | tokens/s 184{{:03d}} | "
            f"mem 61.2 GB | rank {rank}\n")
    out, n, i = [], 0, 0
    while n < size:
        s = line.format(i, i % 10000, i % 1000, i % 1000).encode()
        out.append(s)
        n += len(s)
        i += 1
    return b"".join(out)[:size] if size else b""


def bomb_file(path: str, head: bytes) -> str:
    """1 GiB of zeros after ``head``, gzipped at level 9 (about 1 MB): a bomb."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wb", compresslevel=9) as fh:
        fh.write(head)
        zeros = bytes(16 * MiB)
        for _ in range(64):
            fh.write(zeros)
    return path


def cases(d: str) -> list[tuple[str, list[str], str]]:
    """(name, analyze-log arguments, what the output must say) for each bounded case."""
    def write(name: str, data: bytes | str) -> str:
        path = os.path.join(d, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
        return path

    out: list[tuple[str, list[str], str]] = []
    world = write("world/rank0.log",
                  "[rank0]:[I1125 14:00:00.000000000 ProcessGroupNCCL.cpp:905] [PG ID 0 PG GUID 0 Rank 0] "
                  "ProcessGroupNCCL initialization options: size: 200000000, global rank: 0, TIMEOUT(ms): 600000\n"
                  + TIMEOUT)
    out.append(("world 200,000,000 (init line)", [world], "200000000"))
    tasks = write("tasks/slurm.out", "srun: error: node3: tasks 0-30000000: Killed\n")
    out.append(("tasks 0-30,000,000 killed", [tasks], ""))
    name = write("name/rank99999999999.log", TIMEOUT.replace("[rank0]:", ""))
    out.append(("rank 99,999,999,999 (file name)", [name], ""))
    nranks = write("nranks/rank0.log", "node1:1:1 [0] NCCL INFO comm 0x5581 rank 0 nranks 2000000000 cudaDev 0 "
                   "nvmlDev 0 busId 1000 commId 0x1 - Init COMPLETE\n" + TIMEOUT)
    out.append(("nranks 2,000,000,000", [nranks], ""))
    # Lines just under 1 MiB (so that each is one line), behind a glog header the reader passes on, made of what
    # the patterns that used to backtrack loop on.
    head = b"[rank0]:[E1125 14:00:00.000000000 TCPStore.cpp:1] "
    units = {
        "store [c10d]": b"[c10d]", "cuda assert": b"a.cu:1: ", "segfault": b"x[1]: segfault at 0 ",
        "NET/IB": b"NET/IB ", "address :a": b":a", "tabs": b"\t", "deepspeed": b"sigkill_handler] --local_rank=1 ",
        "CalledProcessError": b"CalledProcessError: Command '", "OOM kill": b"Killed process 1 (", "words": b"Error ",
    }
    for shape, unit in units.items():
        line = head + unit * ((MiB - 256) // len(unit))
        path = write(f"lines/{shape.replace(' ', '_')}/rank0.log", TIMEOUT.encode() + (line + b"\n") * 2)
        out.append((f"1 MiB lines x2: {shape}", [path], ""))
    # One keep word 1000 times on a line, such a line every 64 KiB of a 16 MiB training log: the reader must cost
    # one span a line, not one a hit.
    body = training_lines(16 * MiB)
    lines_at = range(0, len(body), 64 << 10)
    dense = b"".join(body[a: body.find(b"\n", a) + 1] + b"[rank0]: " + b"Error " * 1000 + b"\n"
                     + body[body.find(b"\n", a) + 1: a + (64 << 10)] for a in lines_at)
    out.append(("a word 1000 times a line, 256 lines", [write("dense/rank0.log", TIMEOUT.encode() + dense)], ""))
    good = write("good/rank0.log", TIMEOUT)
    bomb = bomb_file(os.path.join(d, "bomb", "rank1.log.gz"), b"")
    out.append(("gzip bomb 1 GiB as a log", [bomb, good], "rank1.log.gz"))
    evidence = bomb_file(os.path.join(d, "bomb", "node3.evidence.json.gz"), b'{"ncclcheck_evidence": 1, "x": "')
    out.append(("gzip bomb 1 GiB as node evidence", [good, evidence], "node3.evidence.json.gz"))
    midnight = write("midnight/rank1.log",
                     "[rank1]:[E1125 23:59:58.000000000 ProcessGroupNCCL.cpp:1600] [PG ID 0 PG GUID 0 Rank 1] "
                     "Process group watchdog thread terminated with exception: NCCL error: unhandled system error\n"
                     "[rank1]:[I1126 00:00:01.000000000 ProcessGroupNCCL.cpp:1300] [PG ID 0 PG GUID 0 Rank 1] "
                     "first line after midnight\n")
    write("midnight/rank0.log", TIMEOUT.replace("E1125 23:59:59", "E1126 00:10:01"))
    out.append(("glog log crossing midnight", [os.path.dirname(midnight)], ""))
    return out


def offsets(d: str) -> list[tuple[str, int, bool, Run]]:
    """Each bare failure line at each offset of a long training log: found or missed."""
    rows = []
    body = training_lines(max(OFFSETS) + 1024)
    for key, line in FAILURES.items():
        for off in OFFSETS:
            head = body[:off]
            cut = head.rfind(b"\n") + 1 if off else 0
            path = os.path.join(d, "offsets", f"{key}-{off}", "rank3.log")
            os.makedirs(os.path.dirname(path))
            with open(path, "wb") as fh:
                fh.write(head[:cut] + line.encode() + b"\n" + body[:64 << 10])
            r = run(["analyze-log", path, "--json"])
            rows.append((key, off, FOUND_WORDS[key] in r.out, r))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keep", help="write the inputs here and keep them")
    args = ap.parse_args()
    d = args.keep or tempfile.mkdtemp(prefix="ncclcheck-hostile-")
    broken = 0
    try:
        print(f"{'case':<36} {'seconds':>8} {'peak MB':>8} {'rc':>3}  result")
        for name, argv, must in cases(d):
            r = run(["analyze-log", *argv, "--json"])
            problems = [ln for ln in r.err.splitlines() if ln.strip()]
            ok = (not r.killed and r.seconds < MAX_S and r.peak < MAX_MB * MiB and "Traceback" not in r.err
                  and r.rc in (0, 1, 2) and (not must or must in r.out + r.err))
            note = r.killed or (problems[0][:90] if problems else "")
            if not ok and not note:
                note = f"output lacks {must!r}" if must else "bound broken"
            broken += not ok
            print(f"{name:<36} {r.seconds:>8.2f} {r.peak / MiB:>8.0f} {r.rc:>3}  {'ok' if ok else 'BROKEN'} {note}")
        print()
        print(f"{'bare failure line':<18} " + " ".join(f"{o:>9}" for o in ("0", "64 KiB", "1 MiB", "8 MiB")))
        rows = offsets(d)
        for key in FAILURES:
            mine = [r for r in rows if r[0] == key]
            print(f"{key:<18} " + " ".join(f"{'found' if f else 'MISSED':>9}" for _, _, f, _ in mine))
            for _, off, _, r in mine:
                if r.killed or r.seconds >= MAX_S or r.peak >= MAX_MB * MiB or "Traceback" in r.err:
                    broken += 1
                    print(f"  {key} at {off}: BROKEN {r.killed} {r.seconds:.2f} s {r.peak / MiB:.0f} MB")
        missed = sum(not f for *_, f, _ in rows)
        print(f"\n{len(rows) - missed} of {len(rows)} placements found (the reader's anchors decide; not bounded here)")
    finally:
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)
    if broken:
        print(f"{broken} bound(s) broken: < {MAX_S:.0f} s and < {MAX_MB} MB each", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
