import sys, cProfile, pstats, json
from ncclcheck.evidence.reader import resolve
import ncclcheck.job.analyze as an
import ncclcheck.render.json_out as jo
sources = resolve([sys.argv[1]], print)
pr = cProfile.Profile(); pr.enable()
res = an.analyze(sources, workers=2)
text = json.dumps(jo.analysis_json(res, False), indent=2)
pr.disable()
st = pstats.Stats(pr); st.sort_stats("tottime").print_stats(35)
st.sort_stats("cumulative").print_stats(45)
