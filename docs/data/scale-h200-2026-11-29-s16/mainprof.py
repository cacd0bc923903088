"""cProfile of analyze_scans over the cached chunks (mainsim.py's), sorted by tottime."""
import sys, pickle, gc, cProfile, pstats
import ncclcheck.job.analyze as an
with open(sys.argv[1], "rb") as f:
    blobs = pickle.load(f)
gc.disable()
outs = [pickle.loads(b) for b in blobs]
early = an.Early(); scans = []
for out in outs:
    for scan, part in out:
        early.part(scan, part); early.add(scan); scans.append(scan)
pr = cProfile.Profile(); pr.enable()
an.analyze_scans(scans, early=early)
pr.disable()
st = pstats.Stats(pr); st.sort_stats("tottime").print_stats(int(sys.argv[2]) if len(sys.argv) > 2 else 25)
