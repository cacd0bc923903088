#!/bin/bash
# h-scale (session 17, issue 42), the one call: main (62e87b1, = 33158a7's ncclcheck) as scale17 against 0dbcc5d
# (the sixteenth session's base) as base17: ab.py (node logs of 100 at 100,000 ranks, one file per rank at 100,000,
# 262,144 as 2,048 node logs; order swapped each round), then main's per-rank cost at 8,192 / 32,768 / 131,072
# (bench_ranks.py, both shapes), then the reader against grep -c -F on the 512 MiB chatty corpus if time is left.
set -u
export PYTHONUNBUFFERED=1
T0=$SECONDS
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; nproc; uptime; } | tee $OUT/env.txt
python3 -m compileall -q ncclcheck .device/scale17/ncclcheck .device/base17/ncclcheck
cp .device/scale17/ab.py .device/scale17.sh $OUT/
( cd .device/scale17 && AB_NODES=4 AB_BUDGET=230 timeout 300 python3 ab.py ../base17 2>&1 | tee $OUT/ab.txt )
echo "ab done at $((SECONDS - T0)) s" | tee -a $OUT/env.txt; uptime | tee -a $OUT/env.txt
LEFT=$((440 - (SECONDS - T0)))
( cd .device/scale17 && timeout $LEFT python3 tools/bench_ranks.py --sizes 8192,32768,131072 --shapes nodes,files --big 0 2>&1 | tee $OUT/ranks.txt )
echo "ranks done at $((SECONDS - T0)) s" | tee -a $OUT/env.txt; uptime | tee -a $OUT/env.txt
LEFT=$((455 - (SECONDS - T0)))
if [ $LEFT -gt 40 ]; then
  timeout $LEFT python3 tools/bench_analyze.py --only chatty --chatty-mib 512 --runs 9 --engines hyperscan 2>&1 | tail -8 | tee $OUT/reader.txt
fi
echo "all done at $((SECONDS - T0)) s" | tee -a $OUT/env.txt; uptime | tee -a $OUT/env.txt
