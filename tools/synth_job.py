"""Write the combined console log of a synthetic large job with one straggler, in PyTorch 2.11's line shapes.

The world is ``tp`` x ``dp`` ranks: tensor-parallel groups of ``tp`` consecutive ranks and data-parallel
groups of the ranks with the same position in their tp group.  Every step runs an all_reduce in the
rank's tp group, then one in its dp group.  At the bad step the straggler sleeps before its tp
all_reduce: its tp peers wait for it in tp; every other rank finishes tp and waits in dp, either for
the straggler (its own dp group) or for a tp peer of the straggler, itself stuck in tp.

Usage: python tools/synth_job.py OUT.log [--tp 8] [--dp 512] [--straggler 517] [--step 40]
       python tools/synth_job.py OUT_DIR --per-file 100 [...]   (one console log per node)
"""

from __future__ import annotations

import argparse
import hashlib
import os


def guid(name: str) -> str:
    return hashlib.sha1(name.encode()).hexdigest()


def rank_lines(r: int, tp: int, dp: int, straggler: int, step: int) -> tuple[list[str], list[str]]:
    """One rank's group-creation lines and its timeout lines (none for the straggler)."""
    world = tp * dp
    seq = step + 1
    t, d = divmod(r, tp)  # tp group index t, position d inside it
    tp_g, dp_g = guid(f"tp{t}"), guid(f"dp{d}")
    inits = [
        f"[rank{r}]:[I1122 10:00:00.000000000 ProcessGroupNCCL.cpp:988] [PG ID 0 PG GUID 0(default_pg) "
        f"Rank {r}] ProcessGroupNCCL initialization options: size: {world}, global rank: {r}, "
        "TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0",
        f"[rank{r}]:[I1122 10:00:01.000000000 ProcessGroupNCCL.cpp:988] [PG ID 1 PG GUID {tp_g} Rank {d}] "
        f"ProcessGroupNCCL initialization options: size: {tp}, global rank: {r}, TIMEOUT(ms): 600000",
        f"[rank{r}]:[I1122 10:00:02.000000000 ProcessGroupNCCL.cpp:988] [PG ID 2 PG GUID {dp_g} Rank {t}] "
        f"ProcessGroupNCCL initialization options: size: {dp}, global rank: {r}, TIMEOUT(ms): 600000",
    ]
    if r == straggler:
        return inits, []
    if t == straggler // tp:
        pg, g, grank, numel = "1", tp_g, d, 4096
    else:
        pg, g, grank, numel = "2", dp_g, t, 25_165_824
    return inits, [
        f"[rank{r}]:[E1122 10:30:00.000000000 ProcessGroupNCCL.cpp:689] [Rank {grank}] Watchdog caught "
        f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={numel}, "
        f"NumelOut={numel}, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.",
        f"[rank{r}]:[E1122 10:30:00.000100000 ProcessGroupNCCL.cpp:2303] [PG ID {pg} PG GUID {g} Rank "
        f"{grank}]  failure detected by watchdog at work sequence id: {seq} PG status: last enqueued "
        f"work: {seq}, last completed work: {seq - 1}",
    ]


def _console(ranks: range, tp: int, dp: int, straggler: int, step: int) -> list[str]:
    """The console of these ranks: every creation line, then every timeout (as one torchrun prints them)."""
    inits: list[str] = []
    ends: list[str] = []
    for r in ranks:
        i, e = rank_lines(r, tp, dp, straggler, step)
        inits += i
        ends += e
    return inits + ends


def write(path: str, tp: int, dp: int, straggler: int, step: int) -> int:
    """The whole job as one combined console log; returns the number of lines."""
    lines = _console(range(tp * dp), tp, dp, straggler, step)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return len(lines)


def write_nodes(folder: str, tp: int, dp: int, straggler: int, step: int, per_file: int) -> int:
    """The job as one console per node of ``per_file`` ranks (``node-00000.log`` ...); returns the file count."""
    world = tp * dp
    os.makedirs(folder, exist_ok=True)
    files = 0
    for first in range(0, world, per_file):
        lines = _console(range(first, min(first + per_file, world)), tp, dp, straggler, step)
        with open(os.path.join(folder, f"node-{files:05d}.log"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        files += 1
    return files


def agent_console(node: int, per_node: int, tp: int, dp: int, closing: bool) -> list[str]:
    """A node's console under torchrun after global rank 0 raised: its ranks' creation lines, the agent's closing
    signals to its other workers (``closing``), and its failure table naming the node's first rank (exit code 1).

    Every node's agent prints a table, so a job holds one a node: the shape that made each rank's question "which
    table leaves me out" quadratic (issue 42)."""
    ranks = range(node * per_node, (node + 1) * per_node)
    lines = [line for r in ranks for line in rank_lines(r, tp, dp, -1, 40)[0]]
    if node == 0:
        lines.append("[rank0]: RuntimeError: simulated bad batch on rank 0 at step 3")
    agent = "W1122 11:30:28.756000 1541 torch/distributed/elastic/multiprocessing/api.py:1012]"
    lines += [f"{agent} Sending process {10000 + r} closing signal SIGTERM" for r in ranks[1:] if closing]
    return [*lines, "=" * 60, "train.py FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
            "Root Cause (first observed failure):", "[0]:", "  time      : 2026-11-22_11:30:29",
            f"  host      : node{node}", f"  rank      : {ranks[0]} (local_rank: 0)",
            f"  exitcode  : 1 (pid: {10000 + ranks[0]})", "  error_file: <N/A>",
            "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html", "=" * 60]


def write_agents(folder: str, tp: int, dp: int, per_node: int, closing: bool) -> int:
    """The job as torchrun node consoles (:func:`agent_console`); returns the file count."""
    os.makedirs(folder, exist_ok=True)
    nodes = tp * dp // per_node
    for k in range(nodes):
        with open(os.path.join(folder, f"node-{k:05d}.log"), "w", encoding="utf-8") as f:
            f.write("\n".join(agent_console(k, per_node, tp, dp, closing)) + "\n")
    return nodes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--tp", type=int, default=8)
    ap.add_argument("--dp", type=int, default=512)
    ap.add_argument("--straggler", type=int, default=517)
    ap.add_argument("--step", type=int, default=40)
    ap.add_argument("--per-file", type=int, default=0, help="write OUT as a folder of node logs of this many ranks")
    a = ap.parse_args()
    if a.per_file:
        n = write_nodes(a.out, a.tp, a.dp, a.straggler, a.step, a.per_file)
        print(f"{a.out}: {n} node logs, {a.tp * a.dp} ranks")
    else:
        n = write(a.out, a.tp, a.dp, a.straggler, a.step)
        print(f"{a.out}: {n} lines, {a.tp * a.dp} ranks")


if __name__ == "__main__":
    main()
