#!/bin/bash
# h-scale (session 8, issue 42): the scale of this branch beside 28c7021 (base28) on one host's CPU cores.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; nproc; uptime; } | tee $OUT/env.txt
python3 -m compileall -q ncclcheck .device/scale/ncclcheck .device/base28/ncclcheck
cd .device/scale
timeout 215 python3 tools/bench_ranks.py --sizes 8192,100000 --shapes files,nodes --baseline ../base28 \
  --big 262144 --big-nodes 2048 2>&1 | tee $OUT/ranks.txt
cd ../base28
timeout 150 python3 tools/bench_ranks.py --sizes "" --big 262144 --big-nodes 2048 2>&1 | tee $OUT/ranks-base28-big.txt
