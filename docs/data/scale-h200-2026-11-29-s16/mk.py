import sys, os
sys.path.insert(0, "/work/wt/scale16/tools")
import bench_ranks as b
from concurrent.futures import ProcessPoolExecutor
with ProcessPoolExecutor(2) as pool:
    for name, world, per in (("nodes-32768", 32768, 100), ("nodes-16384", 16384, 100), ("files-16384", 16384, 1)):
        f = f"/tmp/s16/{name}"
        if not os.path.exists(f):
            b.write_job(f, world, per, pool)
