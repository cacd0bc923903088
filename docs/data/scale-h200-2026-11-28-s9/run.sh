#!/bin/bash
# h-scale (session 9, issue 42): this branch beside 70d83c3 (base70) on one host's CPU cores: the sweep with the
# baseline first, the largest job and its merge in each tree.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; nproc; uptime; } | tee $OUT/env.txt
python3 -m compileall -q ncclcheck .device/scale/ncclcheck .device/base70/ncclcheck
cd .device/scale
timeout 250 python3 tools/bench_ranks.py --sizes 8192,100000 --shapes files,nodes --baseline ../base70 \
  --big 262144 --big-nodes 2048 2>&1 | tee $OUT/ranks.txt
cd ../base70
timeout 170 python3 tools/bench_ranks.py --sizes "" --big 262144 --big-nodes 2048 2>&1 | tee $OUT/ranks-base70-big.txt
