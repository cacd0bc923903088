#!/bin/bash
# h-scale (session 10, issue 42): 79523a2 (base79) and this branch (scale10) in turn on the same jobs (ab.py, the
# eighth session's script, docs/data/scale-h100x1-2026-11-28-s8/), on one host's CPU cores.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; nproc; uptime; } | tee $OUT/env.txt
python3 -m compileall -q .device/scale10/ncclcheck .device/base79/ncclcheck
cd .device/scale10 && AB_BUDGET=390 timeout 450 python3 ab.py ../base79 2>&1 | tee $OUT/ab.txt
uptime | tee -a $OUT/env.txt
