"""What tensor the hung collective carried, as one analyze-log finding, from the same table explain uses."""

from __future__ import annotations

from ncclcheck.explain.core import MATCH, explain
from ncclcheck.explain.models import Model, merge
from ncclcheck.explain.table import Table
from ncclcheck.findings import Finding, Severity
from ncclcheck.job.model import Group, Work
from ncclcheck.job.verdict import TensorOf


def tensor_finder(model: Model, table: Table, dtype: str, bucket_cap_mb: float | None = None,
                  mesh: tuple[int, int] | None = None, find_unused: bool = False) -> TensorOf:
    """A function naming the tensor of a collective: the best exact match for its op, counts and group size, under
    the job's settings as explain takes them (bucket cap, HSDP mesh, find_unused_parameters)."""

    def find(w: Work, group: Group | None) -> Finding | None:
        n = w.numel_in or w.numel_out
        if not n or w.p2p:
            return None
        size = group.size if group is not None and group.size and group.size > 1 else None
        m = merge(model, world_size=size)
        out = w.numel_out if w.numel_in else None
        e = explain(n, m, out, w.op, dtype, None, table, bucket_cap_mb, mesh, find_unused)
        first = next((c for c in e.matches if c.verdict == MATCH), None)
        loc = (w.loc,) if w.loc is not None else ()
        what = f"{w.op or 'The collective'} {w.number} (NumelIn {n:,})"
        if first is None:
            return Finding(Severity.INFO, "tensor", f"{what} is no tensor of the model ({e.source}): not a gradient "
                           "bucket, parameter unit or activation it forms.", loc,
                           f"See every candidate and near miss: ncclcheck explain --numel {n}"
                           + (f" --op {w.op}" if w.op else ""))
        others = len(e.matches) - 1
        more = f"; {others} other exact match{'es' if others > 1 else ''} (ncclcheck explain --numel {n})" if others else ""
        return Finding(Severity.INFO, "tensor", f"{what} is {first.kind}: {first.description} (table: {e.source}"
                       f"{more}).", loc)

    return find
