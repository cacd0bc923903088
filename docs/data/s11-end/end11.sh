#!/bin/bash
# Session 11's end: the reader beside grep on the 512 MiB chatty corpus (af9d927 = baseaf, the merge = merged), then
# the merge's scale at 8,192, 100,000 and 262,144 ranks, on this host's CPU cores.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; uptime; } | tee $OUT/env.txt
python3 -m compileall -q ncclcheck .device/baseaf/ncclcheck .device/merged/ncclcheck
timeout 170 python3 tools/bench_analyze.py --only chatty --chatty-mib 512 --runs 9 --engines hyperscan \
  --baseline .device/baseaf --baseline .device/merged 2>&1 | tail -14 | tee $OUT/reader.txt
cd .device/merged && timeout 330 python3 tools/bench_ranks.py --sizes 8192,100000 --shapes files,nodes --big 262144 --big-nodes 2048 \
  2>&1 | tail -40 | tee $OUT/ranks.txt
