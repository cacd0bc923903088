"""One chunk of per-rank files as it crosses: unpickling, min of 9 (session 15)."""
import sys, time, pickle, gc
from ncclcheck.evidence.reader import resolve
import ncclcheck.evidence.scan as sc
import ncclcheck.job.analyze as an
sources = resolve([sys.argv[1]], print)[:1000]
out = sc._scan_chunk(sources, an._file_part)
d = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL); gc.disable(); b = 1e9
for i in range(9):
    t = time.process_time(); x = pickle.loads(d); b = min(b, time.process_time() - t); del x
print(f"1000 files: {len(d)/1e6:.2f} MB, loads min of 9 {b*1e3:.1f} ms")
