"""What analyze-log's parent imports to decide, while its workers read (job/analyze.py's ``_load_deciders``).

On a 16-core host the workers read the 512 MiB chatty benchmark corpus in about the time this import takes, so it
sits on the run's critical path (docs/benchmarks.md, issue 40): the host probe (ctypes, importlib.metadata, a fifth of
it) is ``ncclcheck probe``'s, and is loaded only where a finding needs one of its names.
"""

from __future__ import annotations

import json
import subprocess
import sys


def test_the_deciding_side_loads_no_host_probe():
    code = ("import sys, json, ncclcheck.job.records, ncclcheck.job.runs, ncclcheck.job.verdict; "
            "print(json.dumps([m for m in ('ncclcheck.probe.host', 'ncclcheck.probe.lint', 'importlib.metadata', "
            "'ctypes') if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []
