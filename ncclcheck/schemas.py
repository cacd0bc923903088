"""The version of each machine-readable output, in one place: its writer prints it, the help and the manual state it.

A version changes when a field is added, renamed or removed, and the page that describes the output says what each
version changed (docs/json.md, docs/explain.md, docs/snapshot.md).  tests/test_cli.py holds the help to these
numbers and tests/test_docs.py the manual.  Nothing here is imported but constants: the CLI reads this module at
start-up.
"""

from __future__ import annotations

ANALYZE_LOG = 7  # analyze-log --json (render/json_out.py; 7: verdict.action, verdict.stated, verdict.stopped_ranks, job.versions)
EXPLAIN = 6  # explain --json (render/explain.py; 5: model.unbuilt; 6: the pipeline and DeepSpeed kinds, strategies pp and zero)
SNAPSHOT = 4  # snapshot --json and its archive (3: the verdict object with the live positions; 4: stated, stopped_ranks)
PROBE = 1  # probe --format json (render/probe.py)
PROBE_COMPARE = 2  # probe --compare --format json (render/probe.py; 2: every aspect's groups, odd hosts, findings)
