#!/bin/bash
# h-scale (session 16, issue 42), call 2: base16 (0dbcc5d) against scale16 (the facts', works' and statuses' tables, read by rows_with) in rounds of
# node logs of 100 at 100,000 ranks, order swapped each round (ab.py, AB_NODES), as far as AB_BUDGET allows.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --break-system-packages .whl/dev/*.whl 2>&1 | tail -1
{ python3 -c 'import sys, multiprocessing as m; print(sys.version, m.get_start_method(), __import__("os").cpu_count())'; nproc; uptime; } | tee $OUT/env2.txt
python3 -m compileall -q .device/scale16/ncclcheck .device/base16/ncclcheck
cd .device/scale16
AB_NODES=${AB_NODES:-4} AB_FILES=${AB_FILES:-1} AB_BUDGET=${AB_BUDGET:-100} timeout 158 python3 ab.py ../base16 2>&1 | tee $OUT/ab2.txt
uptime | tee -a $OUT/env2.txt
