import sys, json, collections
from ncclcheck.evidence.reader import resolve
import ncclcheck.job.analyze as an
import ncclcheck.render.json_out as jo
from ncclcheck.job.model import GroupId
from ncclcheck.evidence.types import PG
import ncclcheck.job.model as m
cnt = collections.Counter()
def wrap(cls):
    h = cls.__hash__
    def __hash__(self):
        f = sys._getframe(1)
        cnt[(cls.__name__, f.f_code.co_filename.split('/')[-1], f.f_lineno)] += 1
        return h(self)
    cls.__hash__ = __hash__
for c in (GroupId, PG, m.Work):
    wrap(c)
sources = resolve([sys.argv[1]], print)
scans, unopened = an.read_all(sources, None, 2, None, an._file_part, lambda s, p: None)
res = an.analyze_scans(scans)
text = json.dumps(jo.analysis_json(res, False), indent=2)
for k, v in cnt.most_common(25): print(v, k)
