#!/bin/bash
# h-scale (session 8, issue 42): base28 and this branch in turn on the same jobs (ab.py), on one host's CPU cores.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; uptime; } | tee $OUT/env2.txt
python3 -m compileall -q ncclcheck .device/scale/ncclcheck .device/base28/ncclcheck
cd .device/scale && AB_BUDGET=290 timeout 375 python3 ab.py ../base28 2>&1 | tee $OUT/ab.txt
