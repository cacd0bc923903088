"""A worker's part alone: _scan_chunk of the first N inputs of FOLDER (one chunk), process_time, min of R."""
import sys, time, gc
from ncclcheck.evidence.reader import resolve
import ncclcheck.evidence.scan as sc
import ncclcheck.job.analyze as an
folder, n, r = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sources = resolve([folder], print)[:n]
chunk = sc._chunks(sources, 1)[0] if len(sc._chunks(sources, 1)) == 1 else sources
gc.disable()
best = []
for _ in range(r):
    t = time.process_time(); out = sc._scan_chunk(chunk, an._file_part); best.append(time.process_time() - t)
print(f"{len(sources)} inputs: min {min(best)*1e3:.0f} ms, all {' '.join(f'{x*1e3:.0f}' for x in best)}")
