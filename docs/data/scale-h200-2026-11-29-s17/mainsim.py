"""The main process's work alone, in one process, no workers (session 16): the chunks a worker hands back (scanned
here once, pickled to a cache file per tree), then, timed by process_time with the collector off as cli.main:
their unpickling, the early merge as read_all's callback runs it, analyze_scans, the JSON. Usage: mainsim.py FOLDER
CACHE [rounds]."""
import sys, os, time, pickle, gc, json
from ncclcheck.evidence.reader import resolve
import ncclcheck.evidence.scan as sc
import ncclcheck.job.analyze as an
import ncclcheck.render.json_out as jo
folder, cache = sys.argv[1], sys.argv[2]
sources = resolve([folder], print)
if not os.path.exists(cache):
    chunks = sc._chunks(sources, 2)
    blobs = [pickle.dumps(sc._scan_chunk(c, an._file_part), protocol=pickle.HIGHEST_PROTOCOL) for c in chunks]
    with open(cache, "wb") as f:
        pickle.dump(blobs, f)
with open(cache, "rb") as f:
    blobs = pickle.load(f)
gc.disable()
import ncclcheck.job.records, ncclcheck.job.runs, ncclcheck.job.verdict  # noqa: E401 (loaded while workers read)
t0 = time.process_time()
outs = [pickle.loads(b) for b in blobs]
t1 = time.process_time()
early = an.Early()
scans = []
for out in outs:
    for scan, part in out:
        early.part(scan, part)
        early.add(scan)
        scans.append(scan)
t2 = time.process_time()
res = an.analyze_scans(scans, early=early)
t3 = time.process_time()
text = json.dumps(jo.analysis_json(res, False), indent=2)
t4 = time.process_time()
print(f"unpickle {t1-t0:.3f} merge {t2-t1:.3f} analyze {t3-t2:.3f} json {t4-t3:.3f} total {t4-t0:.3f}")
if len(sys.argv) > 3:
    open(sys.argv[3], "w").write(text)
