"""cProfile of mainsim's stages (unpickle, merge, analyze, JSON) for one tree; prints the top functions by tottime."""
import sys, os, pickle, gc, json, cProfile, pstats
from ncclcheck.evidence.reader import resolve
import ncclcheck.job.analyze as an
import ncclcheck.render.json_out as jo
folder, cache, out = sys.argv[1], sys.argv[2], sys.argv[3]
blobs = pickle.load(open(cache, "rb"))
gc.disable()
import ncclcheck.job.records, ncclcheck.job.runs, ncclcheck.job.verdict  # noqa
pr = cProfile.Profile()
pr.enable()
outs = [pickle.loads(b) for b in blobs]
early = an.Early(); scans = []
for o in outs:
    for scan, part in o:
        early.part(scan, part); early.add(scan); scans.append(scan)
res = an.analyze_scans(scans, early=early)
text = json.dumps(jo.analysis_json(res, False), indent=2)
pr.disable()
pr.dump_stats(out)
st = pstats.Stats(out); st.sort_stats("tottime").print_stats(int(sys.argv[4]) if len(sys.argv) > 4 else 40)
