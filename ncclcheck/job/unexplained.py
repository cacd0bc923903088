"""What to rule out where NCCL failed and nothing says why (issue 41, sections 1-3).

NCCL's error codes say only the class of a failure: "unhandled cuda error", "internal error", "invalid usage",
"unhandled system error" (ncclGetErrorString, src/init.cc), and a CUDA call's failure inside NCCL says which call
refused, not why. Where no cause of the catalogue explains such a failure (none matched, or only one of those that
say a failure happened, job/statements.py's GENERIC, with no line whose mechanism the table of stated lines knows
better), three things are left to rule out, in this order, each general to every NCCL failure:

* the releases (job/releases.py): a regression of the NCCL or PyTorch release, or a library built for another CUDA
  than the driver serves;
* the settings the job set: NCCL prints every ``NCCL_*`` variable it reads from the environment or from
  /etc/nccl.conf and ~/.nccl.conf (``NCCL_X set by environment to Y``, src/misc/param.cc, at INFO): each changes
  NCCL's own choices (topology, transports, algorithms, buffers) and is a suspect where NCCL fails with no reason;
* the paths: NCCL chooses its transports itself (network, GPU peer-to-peer, shared memory), and a run with one
  disabled names the one that fails (NCCL's environment documentation: NCCL_IB_DISABLE, NCCL_P2P_DISABLE,
  NCCL_SHM_DISABLE), with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET printing the choices it made.
"""

from __future__ import annotations

from ncclcheck.findings import Finding, Severity
from ncclcheck.job.causes import Diagnosis
from ncclcheck.job.model import VerdictKind
from ncclcheck.job.releases import release_findings
from ncclcheck.job.statements import GENERIC
from ncclcheck.job.versions import Versions, ranks_word
from ncclcheck.probe.agree import Group, value_text

# The verdicts of NCCL failing itself, at set-up or as it ran: a hang or a rank's own error has its own steps.
NCCL_FAILED = frozenset({VerdictKind.NCCL_ERROR, VerdictKind.SETUP_FAILURE})
# NCCL's logging settings (NCCL_DEBUG, NCCL_DEBUG_SUBSYS, NCCL_DEBUG_FILE, ...) change what it prints, not what it does.
_LOGGING = "NCCL_DEBUG"
# The runs that isolate NCCL's paths, one at a time, each disabling one transport (NCCL's environment documentation).
ISOLATE = ("NCCL_IB_DISABLE=1 (sockets instead of InfiniBand/RoCE)", "NCCL_P2P_DISABLE=1 (no GPU peer-to-peer)",
           "NCCL_SHM_DISABLE=1 (no shared memory between the ranks of a node)")


def unexplained(kind: VerdictKind, cause: Diagnosis | None) -> bool:
    """Whether no cause explains this failure: none was found, or only one that says a failure happened and no line
    whose mechanism the table of stated lines knows says more than 'collect more' (job/statements.toml); the layer
    under NCCL a line comes from (job/layers.py) says where, not why, and leaves the failure unexplained."""
    if cause is None:
        return True
    return cause.cause.kind in GENERIC and (cause.said is None or cause.said.action == "collect-more"
                                            or cause.said.located)


def unexplained_findings(v: Versions, kind: VerdictKind, cause: Diagnosis | None) -> list[Finding]:
    """The releases to rule out (any failure with no cause), then, where NCCL itself failed with no reason (a cause
    that says only that, job/statements.py's GENERIC), how to collect the releases where none is stated, the
    settings the job set and the runs that isolate NCCL's paths."""
    open_ = unexplained(kind, cause)
    if cause is None:  # no cause read at all (a peer's lost connection, gloo's too): the releases the logs state only
        return release_findings(v, kind, False) if v.releases else []
    out = release_findings(v, kind, not open_)
    if not open_ or kind not in NCCL_FAILED:
        return out
    return [*out, settings_finding(v), isolate_finding()]


def settings_finding(v: Versions) -> Finding:
    """Each ``NCCL_*`` the job set (its logging aside), with who set it, to unset one at a time; where the inputs
    state none, where to look and which to unset first (those meant for debugging only, probe/lint.py)."""
    rows = [r for r in v.rows if r.aspect.startswith("NCCL_") and not r.aspect.startswith(_LOGGING)
            and any(g.value is not None for g in r.groups)]
    if not rows:
        # Here, not with the module: probe/lint.py brings the host probe (ctypes, importlib.metadata), a fifth of
        # what analyze-log imports to decide, which its parent process waits on while the workers read.
        from ncclcheck.probe.lint import DEBUG_ONLY

        return Finding(
            Severity.INFO, "settings-to-unset",
            "These inputs state no NCCL_* setting (NCCL prints each one it reads at NCCL_DEBUG=INFO: "
            "`NCCL_X set by environment to Y`), so any the job set is unknown.",
            (),
            "list the job's settings (`env | grep ^NCCL_` where the ranks start, /etc/nccl.conf, ~/.nccl.conf) and "
            "unset them one at a time, first those meant for debugging only: " + ", ".join(DEBUG_ONLY)
            + ", NCCL_GRAPH_FILE, NCCL_TOPO_FILE",
        )
    said = "; ".join(
        f"{r.aspect}=" + " | ".join(_held(g) for g in r.groups if g.value is not None) for r in rows)
    names = ", ".join(r.aspect for r in rows)
    return Finding(
        Severity.WARNING, "settings-to-unset",
        f"NCCL failed with no reason, and the job set {said}: each changes NCCL's own choices (topology, transports, "
        "algorithms, buffers) and is a suspect.",
        (),
        f"unset them one at a time and rerun ({names}); keep only those the job needs, with their reason",
    )


def _held(g: Group) -> str:
    """A value with the ranks that ran with it; an input that names no rank is not named (its file is the report's)."""
    ranks = [m for m in g.members if m.isdigit()]
    return value_text(g.value) + (f" ({ranks_word(ranks)})" if ranks else "")


def isolate_finding() -> Finding:
    """The runs that name the failing path."""
    return Finding(
        Severity.INFO, "isolate-path",
        "NCCL chooses its transports itself (network, GPU peer-to-peer, shared memory): a run with one of them "
        "disabled names the one that fails.",
        (),
        "rerun once with each, on the same nodes: " + ", ".join(ISOLATE) + "; with NCCL_DEBUG=INFO "
        "NCCL_DEBUG_SUBSYS=INIT,NET NCCL prints the transports and interfaces it chose. The run that works names "
        "the failing path; these settings are for the diagnosis, not a fix to keep",
    )
