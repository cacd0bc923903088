"""Main-process CPU after the reading, min of N: the early merge (Early.add of each scan and its worker's part), the
analysis and its JSON; the scans and parts read once by 2 workers, kept between runs. Session 13."""
import sys, time, json
from ncclcheck.evidence.reader import resolve
import ncclcheck.job.analyze as an
import ncclcheck.render.json_out as jo
from ncclcheck.evidence.gcpause import paused
folder = sys.argv[1]; n = int(sys.argv[2])
sources = resolve([folder], print)
with paused():
    parts = {}
    scans, unopened = an.read_all(sources, None, 2, None, an._file_part, lambda s, p: parts.__setitem__(id(s), p))
    best = {}
    for i in range(n):
        t0 = time.process_time()
        e = an.Early()
        for s in scans:
            e.part(s, parts.get(id(s)))
            e.add(s)
        t1 = time.process_time()
        res = an.analyze_scans(scans, early=e)
        t2 = time.process_time()
        text = json.dumps(jo.analysis_json(res, False), indent=2)
        t3 = time.process_time()
        for k, v in (("early", t1 - t0), ("analyze", t2 - t1), ("json", t3 - t2), ("total", t3 - t0)):
            best[k] = min(best.get(k, 1e9), v)
        del res
if len(sys.argv) > 3: open(sys.argv[3], "w").write(text)
print(f"{folder}: min of {n}: " + ", ".join(f"{k} {v:.3f}" for k, v in best.items()), flush=True)
