"""Write the combined console log of a synthetic large job with one straggler, in PyTorch 2.11's line shapes.

The world is ``tp`` x ``dp`` ranks: tensor-parallel groups of ``tp`` consecutive ranks and data-parallel
groups of the ranks with the same position in their tp group.  Every step runs an all_reduce in the
rank's tp group, then one in its dp group.  At the bad step the straggler sleeps before its tp
all_reduce: its tp peers wait for it in tp; every other rank finishes tp and waits in dp, either for
the straggler (its own dp group) or for a tp peer of the straggler, itself stuck in tp.

Usage: python tools/synth_job.py OUT.log [--tp 8] [--dp 512] [--straggler 517] [--step 40]
"""

from __future__ import annotations

import argparse
import hashlib


def guid(name: str) -> str:
    return hashlib.sha1(name.encode()).hexdigest()


def write(path: str, tp: int, dp: int, straggler: int, step: int) -> int:
    world = tp * dp
    seq = step + 1
    lines = []
    for r in range(world):
        t, d = divmod(r, tp)  # tp group index t, position d inside it
        tp_g = guid(f"tp{t}")
        dp_g = guid(f"dp{d}")
        lines.append(f"[rank{r}]:[I1122 10:00:00.000000000 ProcessGroupNCCL.cpp:988] [PG ID 0 PG GUID 0(default_pg) "
                     f"Rank {r}] ProcessGroupNCCL initialization options: size: {world}, global rank: {r}, "
                     "TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0")
        lines.append(f"[rank{r}]:[I1122 10:00:01.000000000 ProcessGroupNCCL.cpp:988] [PG ID 1 PG GUID {tp_g} Rank {d}] "
                     f"ProcessGroupNCCL initialization options: size: {tp}, global rank: {r}, TIMEOUT(ms): 600000")
        lines.append(f"[rank{r}]:[I1122 10:00:02.000000000 ProcessGroupNCCL.cpp:988] [PG ID 2 PG GUID {dp_g} Rank {t}] "
                     f"ProcessGroupNCCL initialization options: size: {dp}, global rank: {r}, TIMEOUT(ms): 600000")
    straggler_tp = straggler // tp
    for r in range(world):
        if r == straggler:
            continue
        t, d = divmod(r, tp)
        if t == straggler_tp:
            pg, g, grank, numel = "1", guid(f"tp{t}"), d, 4096
        else:
            pg, g, grank, numel = "2", guid(f"dp{d}"), t, 25_165_824
        lines.append(f"[rank{r}]:[E1122 10:30:00.000000000 ProcessGroupNCCL.cpp:689] [Rank {grank}] Watchdog caught "
                     f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={numel}, "
                     f"NumelOut={numel}, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.")
        lines.append(f"[rank{r}]:[E1122 10:30:00.000100000 ProcessGroupNCCL.cpp:2303] [PG ID {pg} PG GUID {g} Rank "
                     f"{grank}]  failure detected by watchdog at work sequence id: {seq} PG status: last enqueued "
                     f"work: {seq}, last completed work: {seq - 1}")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return len(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--tp", type=int, default=8)
    ap.add_argument("--dp", type=int, default=512)
    ap.add_argument("--straggler", type=int, default=517)
    ap.add_argument("--step", type=int, default=40)
    a = ap.parse_args()
    n = write(a.out, a.tp, a.dp, a.straggler, a.step)
    print(f"{a.out}: {n} lines, {a.tp * a.dp} ranks")


if __name__ == "__main__":
    main()
