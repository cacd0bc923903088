import sys, pickle, time, gc
from ncclcheck.evidence.reader import resolve
import ncclcheck.evidence.scan as sc
from ncclcheck.job.analyze import _file_part
from ncclcheck.job import records as rc
srcs = resolve([sys.argv[1]], print)[:20]
out = sc._scan_chunk(srcs, _file_part)
gc.disable()
def t(f, n=7):
    b=9
    for i in range(n):
        t0=time.process_time(); f(); b=min(b,time.process_time()-t0)
    return b
d = pickle.dumps(out, protocol=5)
print("chunk", len(d), "loads %.4f" % t(lambda: pickle.loads(d)))
def mergeall():
    m = rc.Merger()
    for s, p in out: m.add(s, p)
    m.records()
print("merge add+records %.4f" % t(mergeall))
