"""Which callers make a FactTable's objects (a temporary trace)."""
import sys, traceback, collections, json
import ncclcheck.evidence.tables as t
from ncclcheck.evidence.reader import resolve
import ncclcheck.job.analyze as an
import ncclcheck.render.json_out as jo
calls = collections.Counter()
orig = t.LineTable.items
def items(self):
    if self._made is None:
        st = traceback.extract_stack(limit=4)[:-1]
        calls[(type(self).__name__, " <- ".join(f"{f.filename.split('ncclcheck/')[-1]}:{f.lineno}" for f in reversed(st)))] += 1
    return orig(self)
t.LineTable.items = items
res = an.analyze(resolve([sys.argv[1]], print), workers=2)
calls[("--- json", "")] += 1
json.dumps(jo.analysis_json(res, False))
for k, v in calls.most_common(): print(v, k)
