import sys, os, pickle, time, gc, dataclasses, copyreg
from ncclcheck.evidence.reader import resolve
import ncclcheck.evidence.scan as sc
import ncclcheck.job.analyze as an
import ncclcheck.job.records as rc
from ncclcheck.evidence import types, frdump
folder = sys.argv[1]; variant = sys.argv[2]
sources = resolve([folder], print)
files = [s for s in sources if not s.stream]
chunks = sc._chunks(files, 2)
gc.disable()
classes = [v for ns in (vars(types), vars(frdump), vars(rc)) for v in list(ns.values())
           if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == ns["__name__"]]
ref = [sc._scan_chunk(c, an._file_part, True) for c in chunks]
def install(cls, variant):
    names = [f.name for f in dataclasses.fields(cls)]
    from operator import attrgetter
    get = attrgetter(*names) if len(names) > 1 else (lambda o, n=names[0]: (getattr(o, n),))
    if variant == "new":
        args = ", ".join(names)
        body = "".join(f"    _s(o, {n!r}, {n})\n" for n in names)
        src = f"def make({args}, _n=_n, _s=_s, _c=_c):\n    o = _n(_c)\n{body}    return o\n"
        ns = {"_n": object.__new__, "_s": object.__setattr__, "_c": cls}
        exec(src, ns)
        make = ns["make"]; make.__qualname__ = f"_make_{cls.__name__}"; make.__module__ = "__main__"
        globals()[make.__qualname__] = make
    elif variant == "cls":
        make = cls
    def red(self, make=make, get=get):
        return (make, get(self))
    cls.__reduce__ = red
for c in classes: install(c, variant)
blobs = [pickle.dumps(r, protocol=pickle.HIGHEST_PROTOCOL) for r in ref]
best = 1e9
for _ in range(7):
    t = time.process_time()
    out = [pickle.loads(b) for b in blobs]
    best = min(best, time.process_time() - t)
    del out
assert [pickle.loads(b) for b in blobs] == ref
print(folder, variant, "MB %.1f" % (sum(map(len, blobs)) / 1e6), "loads min of 7: %.3f s" % best)
