#!/bin/bash
# h-scale (session 10, issue 42), second call: the cost a rank and its exponent on this branch (scale10), 8,192 to
# 100,000 ranks, both shapes, 79523a2 (base79) first on 8,192 and 100,000; the largest job and its merge.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; nproc; uptime; } | tee $OUT/env2.txt
python3 -m compileall -q .device/scale10/ncclcheck .device/base79/ncclcheck
cd .device/scale10 && timeout 420 python3 tools/bench_ranks.py --sizes 8192,32768,100000 --shapes files,nodes \
  --baseline ../base79 --baseline-sizes 8192,100000 --big 262144 --big-nodes 2048 2>&1 | tee $OUT/ranks.txt
uptime | tee -a $OUT/env2.txt
