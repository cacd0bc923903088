"""The wait-for graph and its chain over one built job, min of N (main CPU s): the stages GroupId's hash keys."""
import sys, time
from ncclcheck.evidence.reader import resolve
import ncclcheck.job.analyze as an
from ncclcheck.job.graph import wait_for
from ncclcheck.job.chain import chain_lines
from ncclcheck.evidence.gcpause import paused
sources = resolve([sys.argv[1]], print)
with paused():
    scans, _ = an.read_all(sources, None, 2, None, an._file_part, lambda s, p: None)
    job = an.analyze_scans(scans).job
    best = {}
    for i in range(int(sys.argv[2])):
        t0 = time.process_time(); edges, roots = wait_for(job.ranks, job.groups)
        t1 = time.process_time(); lines = chain_lines(job, roots)
        t2 = time.process_time()
        for k, v in (("wait_for", t1 - t0), ("chain_lines", t2 - t1), ("both", t2 - t0)):
            best[k] = min(best.get(k, 1e9), v)
print(f"{sys.argv[1]}: {len(edges)} edges, min of {sys.argv[2]}: " + ", ".join(f"{k} {v:.3f}" for k, v in best.items()))
