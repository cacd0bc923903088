#!/bin/bash
# h-scale (session 15, issue 42), call 1: base15 (de49e3a, main's head) against scale15 (86b2020, the group inits'
# table) in rounds, order swapped each round (ab.py, the fourteenth session's): node logs of 100 at 100,000 ranks,
# 262,144 ranks as 2,048 node logs, one file per rank at 100,000, as far as the budget allows.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; nproc; uptime; } | tee $OUT/env.txt
python3 -m compileall -q .device/scale15/ncclcheck .device/base15/ncclcheck
cd .device/scale15
AB_BUDGET=330 timeout 390 python3 ab.py ../base15 2>&1 | tee $OUT/ab.txt
uptime | tee -a $OUT/env.txt
