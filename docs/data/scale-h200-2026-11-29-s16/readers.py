"""The facts' and works' readers alone over the cached chunks' scans, min of 5 process_time each (session 16)."""
import sys, pickle, gc, time
import ncclcheck.job.analyze as an
from ncclcheck.job.facts import read_facts
from ncclcheck.job.world import statements
from ncclcheck.job.versions import read_versions
from ncclcheck.job.attempts import split
import ncclcheck.render.json_out as jo
with open(sys.argv[1], "rb") as f:
    blobs = pickle.load(f)
gc.disable()
scans = [s for b in blobs for s, p in pickle.loads(b)]
def tm(name, f):
    best = 1e9
    for i in range(5):
        t = time.process_time(); f(); best = min(best, time.process_time() - t)
    return f"{name} {best*1e3:.0f}"
ev = {e.name: e for e in jo._EVENTS}
print(", ".join([tm("read_facts", lambda: read_facts(scans)), tm("statements", lambda: statements(scans)),
    tm("versions", lambda: read_versions(scans)), tm("split", lambda: split(scans)),
    tm("json facts", lambda: ev["facts"].folded(scans)), tm("json nccl_errors", lambda: ev["nccl_errors"].folded(scans)),
    tm("json group_inits", lambda: ev["group_inits"].folded(scans))]) + " ms")
