import gc, sys, time
gc.disable()
from ncclcheck.evidence.reader import resolve
import ncclcheck.job.analyze as an
sources = resolve([sys.argv[1]], print)
t = time.process_time(); w = time.perf_counter()
early = an.Early()
kw = {}
if hasattr(an, "_file_part"):
    kw = dict(part=an._file_part, on_part=early.part)
scans, _ = an.read_all(sources, early.add, int(sys.argv[2]), an._load_deciders, **kw)
print(f"read_all main CPU {time.process_time()-t:.2f} wall {time.perf_counter()-w:.2f}")
