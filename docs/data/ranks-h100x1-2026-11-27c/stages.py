"""Stage wall and CPU times of analyze-log's main process: python stages.py FOLDER"""
import gc, sys, time, json, os
gc.disable()
from ncclcheck.evidence.reader import resolve
from ncclcheck.job.analyze import read_all, _load_deciders, analyze_scans
folder = sys.argv[1]
W, P = time.perf_counter, time.process_time
marks = [("start", W(), P())]
def mark(n): marks.append((n, W(), P()))
srcs = resolve([folder], print); mark("resolve")
scans, probs = read_all(srcs, None, None, _load_deciders); mark("read")
from ncclcheck.job.records import merge_records
from ncclcheck.job.build import build_job
from ncclcheck.render.json_out import analysis_json
ss = sorted(scans, key=lambda s: s.file)
recs = merge_records(ss); mark("merge_records")
job = build_job(ss, recs); mark("build_job")
res = analyze_scans(scans, "float32", probs); mark("analyze_scans(all)")
out = json.dumps(analysis_json(res, False), indent=2); mark("json")
ranks = len({r for s in scans for r in s.ranks_seen})
print(f"{folder}: {ranks} ranks, {len(srcs)} files, {os.cpu_count()} cpus")
for (n0, w0, p0), (n, w, p) in zip(marks, marks[1:]):
    print(f"  {n:20} wall {w-w0:7.2f} s {1e6*(w-w0)/ranks:7.1f} us/rank   main cpu {p-p0:7.2f} s")
