import sys, gc, cProfile, pstats
from ncclcheck.evidence.reader import resolve
import ncclcheck.evidence.scan as sc
import ncclcheck.job.analyze as an
folder, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sources = resolve([folder], print)[:n]
gc.disable()
sc._scan_chunk(sources[:50], an._file_part)
pr = cProfile.Profile(); pr.enable(); sc._scan_chunk(sources, an._file_part); pr.disable(); pr.dump_stats(out)
