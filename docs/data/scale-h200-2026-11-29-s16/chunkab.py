"""One chunk of 20 node logs (2,000 ranks) as it crosses: pickled size, unpickling CPU (min of 9). Session 16."""
import sys, time, pickle, gc
from ncclcheck.evidence.reader import resolve
import ncclcheck.evidence.scan as sc
import ncclcheck.job.analyze as an
sources = resolve([sys.argv[1]], print)[:int(sys.argv[2]) if len(sys.argv) > 2 else 20]
out = sc._scan_chunk(sources, an._file_part)
data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
gc.disable(); best = 1e9
for i in range(9):
    t = time.process_time(); x = pickle.loads(data); best = min(best, time.process_time() - t); del x
print(f"{len(data)/1e6:.3f} MB, loads min of 9 {best*1e3:.1f} ms")
