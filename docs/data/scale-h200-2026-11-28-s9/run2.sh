#!/bin/bash
# h-scale (session 9, issue 42): base70 and this branch in turn on the same jobs (ab.py: the script kept in
# docs/data/scale-h100x1-2026-11-28-s8/, copied into the tree it ran in), on one host's CPU cores.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; uptime; } | tee $OUT/env2.txt
python3 -m compileall -q ncclcheck .device/scale/ncclcheck .device/base70/ncclcheck
cd .device/scale && AB_BUDGET=380 timeout 470 python3 ab.py ../base70 2>&1 | tee $OUT/ab.txt
