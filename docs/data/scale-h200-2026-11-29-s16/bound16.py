"""Bound of a works/statuses table: the chunk with those lists replaced by columns of their fields (Locs as lines)."""
import sys, time, pickle, gc, dataclasses
from ncclcheck.evidence.reader import resolve
import ncclcheck.evidence.scan as sc
import ncclcheck.job.analyze as an
sources = resolve([sys.argv[1]], print)[:20]
out = sc._scan_chunk(sources, an._file_part)
def tm(o):
    d = pickle.dumps(o, protocol=5); gc.disable(); b = 1e9
    for i in range(9):
        t = time.process_time(); x = pickle.loads(d); b = min(b, time.process_time() - t); del x
    return round(b * 1e3, 1), len(d)
def cols(xs):
    if not xs: return ()
    names = [f.name for f in dataclasses.fields(xs[0])]
    return tuple(tuple(getattr(x, n).line if n == "loc" else getattr(x, n) for x in xs) for n in names)
for i in range(2):
    print("as is", tm(out))
    print("statuses flat", tm([(dataclasses.replace(s, statuses=cols(s.statuses)), p) for s, p in out]))
    print("+works flat", tm([(dataclasses.replace(s, statuses=cols(s.statuses), works=cols(s.works)), p) for s, p in out]))
