#!/bin/bash
# Mid-way: where the main process's time goes at 100,000 ranks on this host (stage wall and CPU times).
set -u
export PYTHONPATH=$PWD
python3 -m pip install -q --no-index --break-system-packages ../../.whl/dev/*.whl 2>&1 | tail -1
python3 -m compileall -q ncclcheck
nproc
T=$(mktemp -d)
python3 - "$T" <<'PY'
import sys, os
sys.path.insert(0, "tools")
import bench_ranks as b
from concurrent.futures import ProcessPoolExecutor
with ProcessPoolExecutor(16) as pool:
    for shape, per in (("nodes", 100), ("files", 1)):
        b.write_job(os.path.join(sys.argv[1], f"{shape}-100000"), 100000, per, pool)
PY
for s in nodes files; do
  python3 .device/stages.py $T/$s-100000 2>&1 | tee -a $OUT/stages.txt
  /usr/bin/time -f "cli wall %e s cpu %U+%S maxrss %M KB" python3 -m ncclcheck analyze-log --json $T/$s-100000 2>&1 >/dev/null | tail -1 | tee -a $OUT/stages.txt
done
