#!/bin/bash
# h-scale (session 15, issue 42), call 2: base15 (de49e3a) against scale15 (5045209: the group inits' table and the
# two small items) in rounds of node logs of 100 at 100,000 ranks alone, order swapped each round (ab.py, AB_NODES).
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; nproc; uptime; } | tee $OUT/env2.txt
python3 -m compileall -q .device/scale15/ncclcheck .device/base15/ncclcheck
cd .device/scale15
AB_NODES=14 AB_BUDGET=300 timeout 370 python3 ab.py ../base15 2>&1 | tee $OUT/ab2.txt
uptime | tee -a $OUT/env2.txt
