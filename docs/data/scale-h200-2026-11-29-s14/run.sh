#!/bin/bash
# h-scale (session 14, issue 42), the one call: base14 (3dd7da5, main's head) against scale14 (this branch) in
# rounds, order swapped each round (ab.py): node logs of 100 at 100,000 ranks (8 rounds), 262,144 ranks as 2,048
# node logs (2), one file per rank at 100,000 (2), as far as the budget allows.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; nproc; uptime; } | tee $OUT/env.txt
python3 -m compileall -q .device/scale14/ncclcheck .device/base14/ncclcheck
cd .device/scale14
AB_BUDGET=330 timeout 390 python3 ab.py ../base14 2>&1 | tee $OUT/ab.txt
uptime | tee -a $OUT/env.txt
