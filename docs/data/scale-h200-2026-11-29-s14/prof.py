import sys, time, json, cProfile, pstats
from ncclcheck.evidence.reader import resolve
import ncclcheck.job.analyze as an
import ncclcheck.render.json_out as jo
from ncclcheck.evidence.gcpause import paused
folder = sys.argv[1]
sources = resolve([folder], print)
with paused():
    parts = {}
    scans, unopened = an.read_all(sources, None, 2, None, an._file_part, lambda s, p: parts.__setitem__(id(s), p))
    pr = cProfile.Profile(); pr.enable()
    e = an.Early()
    for s in scans:
        e.part(s, parts.get(id(s)))
        e.add(s)
    res = an.analyze_scans(scans, early=e)
    text = json.dumps(jo.analysis_json(res, False), indent=2)
    pr.disable()
st = pstats.Stats(pr); st.sort_stats("tottime").print_stats(70); st.sort_stats("cumulative").print_stats(45)
