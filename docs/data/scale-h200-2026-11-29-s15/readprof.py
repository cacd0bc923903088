"""Main-process CPU of the reading alone (read_all with 2 workers), cProfiled; session 15."""
import sys, time, cProfile, pstats
from ncclcheck.evidence.reader import resolve
import ncclcheck.job.analyze as an
from ncclcheck.evidence.gcpause import paused
folder = sys.argv[1]
sources = resolve([folder], print)
with paused():
    parts = {}
    pr = cProfile.Profile(); t0 = time.process_time(); pr.enable()
    scans, unopened = an.read_all(sources, None, 2, None, an._file_part, lambda s, p: parts.__setitem__(id(s), p))
    pr.disable(); print("read_all main CPU", time.process_time() - t0)
st = pstats.Stats(pr); st.sort_stats("tottime").print_stats(25)
