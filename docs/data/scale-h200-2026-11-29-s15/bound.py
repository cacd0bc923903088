import sys, time, pickle, gc, dataclasses
from ncclcheck.evidence.reader import resolve
import ncclcheck.evidence.scan as sc
import ncclcheck.job.analyze as an
from ncclcheck.evidence.types import GroupInit, Loc, Fact
sources = resolve([sys.argv[1]], print)[:20]
out = sc._scan_chunk(sources, an._file_part)
def tm(o):
    d = pickle.dumps(o, protocol=5); gc.disable(); b = 1e9
    for i in range(9):
        t = time.perf_counter(); x = pickle.loads(d); b = min(b, time.perf_counter() - t); del x
    return b * 1e3, len(d)
print("as is", tm(out))
def flat_gi(s):
    f = s.file
    assert all(g.loc.file == f for g in s.group_inits)
    return dataclasses.replace(s, group_inits=(tuple(g.who for g in s.group_inits), tuple(g.pg for g in s.group_inits),
        tuple(g.group_rank for g in s.group_inits), tuple(g.size for g in s.group_inits), tuple(g.global_rank for g in s.group_inits),
        tuple(g.timeout_ms for g in s.group_inits), tuple(g.loc.line for g in s.group_inits)))
out2 = [(flat_gi(s), p) for s, p in out]
print("group inits flat", tm(out2))
def flat_f(s):
    return dataclasses.replace(s, facts=(tuple(g.who for g in s.facts), tuple(g.key for g in s.facts), tuple(g.value for g in s.facts), tuple(g.loc.line for g in s.facts)))
out3 = [(flat_f(s), p) for s, p in out2]
print("+facts flat", tm(out3))
gc.enable()
import timeit
print("Loc ctor us", timeit.timeit(lambda: Loc("a", 5), number=200000)/0.2)
