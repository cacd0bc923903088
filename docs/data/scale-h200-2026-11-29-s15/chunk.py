"""One chunk of node logs as it crosses: pickled size, unpickling time (min of 7), objects by type. Session 15."""
import sys, os, time, pickle, gc, collections
from ncclcheck.evidence.reader import resolve
import ncclcheck.evidence.scan as sc
import ncclcheck.job.analyze as an
folder = sys.argv[1]; n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
sources = resolve([folder], print)[:n]
out = sc._scan_chunk(sources, an._file_part)
data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
gc.disable()
best = 1e9
for i in range(7):
    t = time.process_time(); x = pickle.loads(data); best = min(best, time.process_time() - t); del x
print(f"{n} inputs: {len(data)/1e6:.2f} MB, loads min of 7 {best*1e3:.1f} ms")
cnt = collections.Counter()
seen = set()
def walk(o):
    if id(o) in seen: return
    seen.add(id(o))
    t = type(o)
    if t in (tuple, list):
        for v in o: walk(v)
        return
    if t is dict:
        for v in o.values(): walk(v)
        return
    if hasattr(o, "__dataclass_fields__"):
        cnt[t.__name__] += 1
        for f in o.__dataclass_fields__: walk(getattr(o, f))
walk(out)
print(cnt.most_common(25))
