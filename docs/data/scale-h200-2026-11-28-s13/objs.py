import sys, pickle, time, collections, gc
from ncclcheck.evidence.reader import resolve
import ncclcheck.evidence.scan as sc
from ncclcheck.job.analyze import _file_part
srcs = resolve([sys.argv[1]], print)[:int(sys.argv[2])]
out = sc._scan_chunk(srcs, _file_part)
data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
print("bytes", len(data))
gc.disable()
best=9
for i in range(5):
    t=time.process_time(); x=pickle.loads(data); best=min(best,time.process_time()-t)
print("loads", best)
cnt = collections.Counter(); ids=set()
def walk(o):
    if id(o) in ids: return
    ids.add(id(o))
    t = type(o).__name__
    if isinstance(o, (list, tuple)):
        cnt[t]+=1
        for e in o: walk(e)
    elif isinstance(o, dict):
        cnt[t]+=1
        for k,v in o.items(): walk(k); walk(v)
    elif hasattr(o, "__dataclass_fields__"):
        cnt[t]+=1
        for f in o.__dataclass_fields__: walk(getattr(o, f))
    elif hasattr(o, "__dict__"):
        cnt[t]+=1
        for v in vars(o).values(): walk(v)
    elif hasattr(o, "__slots__"):
        cnt[t]+=1
        for s in o.__slots__: walk(getattr(o, s, None))
    else:
        cnt[t]+=1
walk(x)
for k,v in cnt.most_common(30): print(v, k)
