"""What to do next: one action class on every verdict, chosen from the evidence, with why and the node at fault.

An engineer's next move after a verdict is one of five (issue 44): change the program (``fix-code``), change a
setting of the job or its hosts (``fix-config``), take a node out of the scheduler's pool (``drain-node``), run the job
again as it is (``restart``), or bring the evidence that decides between them (``collect-more``). A cause of the
catalogue carries its action as data (its file's ``[action]``); the verdicts that are no cause (a hang's straggler, a
mismatch, a deadlock, missing ranks, nothing failed) get theirs from the table below, decided from the
:class:`~ncclcheck.job.rules.Decision` and the job model alone. The ``reason`` is a short code a script can switch on:
a cause's kind, or the table's code; docs/json.md lists them all.

Two rules hold over both: a restart is never advised where the program is the cause (a culprit ended by an exception
of its own is ``fix-code``, whatever the launcher's restart policy did), and ``drain-node`` names the node as the
evidence states it (the host record's host and GPU bus, else the culprits' host from their own NCCL lines).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ncclcheck.job import nodeloss
from ncclcheck.job.causedata import COLLECT_MORE, DRAIN_NODE, FIX_CODE, FIX_CONFIG, LATE, RESTART
from ncclcheck.job.model import EndKind, Job, VerdictKind
from ncclcheck.job.rules import Decision
from ncclcheck.ranks import rank_phrase

_ADDRESS = re.compile(r"^[\d.]+$|:")  # an IPv4 or IPv6 address, not a host's name
# A verbs call of NCCL's InfiniBand set-up (net_ib.cc connecting a queue pair, registering memory): it fails on the
# addresses and devices the job chose (NCCL_IB_GID_INDEX, NCCL_IB_HCA, GPUDirect RDMA), not on a link that went bad
# while the job ran (a completion with an error status).


@dataclass(frozen=True)
class Node:
    """The node at fault, as the evidence states it: its host (name or address), the GPU's PCI bus id, its ranks."""

    host: str | None
    gpu_bus_id: str | None
    ranks: tuple[int, ...]

    def words(self) -> str:
        """``node-7 (GPU 0000:3b:00, rank 3)``; a node no input names is the host of its ranks or its GPU."""
        if self.host:
            more = [f"GPU {self.gpu_bus_id}"] * bool(self.gpu_bus_id) + [rank_phrase(self.ranks)] * bool(self.ranks)
            return self.host + (f" ({', '.join(more)})" if more else "")
        of = (rank_phrase(self.ranks) if self.ranks else
              f"GPU {self.gpu_bus_id}" if self.gpu_bus_id else "the failed rank")
        gpu = f", GPU {self.gpu_bus_id}" if self.gpu_bus_id and self.ranks else ""
        return f"the host of {of} (no input names it{gpu})"


@dataclass(frozen=True)
class Action:
    """One action class (causedata.ACTIONS), the code a script switches on, why in words, the node to drain."""

    kind: str
    reason: str
    why: str
    node: Node | None = None

    def words(self) -> str:
        """``drain-node node-7 (GPU 0000:3b:00, rank 3): the GPU itself reported a fault ...``"""
        return f"{self.kind}{' ' + self.node.words() if self.node is not None else ''}: {self.why}"

    def headline(self) -> str:
        """The class, the node and why up to its first colon: the report's one line, whose rest its next steps say."""
        return f"{self.kind}{' ' + self.node.words() if self.node is not None else ''}: {_first_clause(self.why)}"


def _first_clause(text: str) -> str:
    """``text`` up to its first ': ' outside brackets and backquotes (the reason; what follows is what to do)."""
    depth, quoted = 0, False
    for i, c in enumerate(text):
        if c == "`":
            quoted = not quoted
        elif not quoted and c in "([":
            depth += 1
        elif not quoted and c in ")]":
            depth -= 1
        elif c == ":" and not quoted and depth == 0 and text[i + 1:i + 2] == " ":
            return text[:i]
    return text


# The verdicts that are no cause of the catalogue: (kind, reason, why). A hang's rules and the quiet rules decide
# these kinds; the cases a kind splits into are told apart in decide_action from the decision and the model.
TABLE: dict[str, tuple[str, str]] = {
    "collective_mismatch": (FIX_CODE, "the ranks issued different collectives (or sizes, or a count the others never "
                                      "reach: uneven data, code only some ranks run): the program must make every rank "
                                      "call the same; a restart runs into the same hang"),
    "deadlock": (FIX_CODE, "the ranks wait for each other in a ring across groups: the program issues the groups' "
                           "collectives in different orders on different ranks"),
    "user_exception": (FIX_CODE, "a rank raised an exception in the program's own code first and the others only "
                                 "waited for it or lost it: fix that error; restarting runs into it again"),
    "exit_teardown": (FIX_CODE, "the work was done and the process groups hung while the interpreter tore them down: "
                                "call destroy_process_group() at the end of every rank"),
    "busy_rank": (FIX_CONFIG, "{culprits}, whom the others waited for, was busy with legitimate work of {its} own "
                              "(the verdict quotes its last line) for longer than the collective timeout: give that "
                              "phase a longer timeout, or spread the work over every rank"),
    "transport_failed": (RESTART, "NCCL lost its connections while every rank in these inputs stayed up and nothing "
                                  "names a host or the code: a transient network failure; run it again, and if it "
                                  "repeats between the same hosts, drain them"),
    "peer_lost": (COLLECT_MORE, "{culprits} only lost {its} peers (a connection closed or reset, a remote exit), "
                                "which is what a peer that crashed leaves behind: bring the other ranks' own logs "
                                "(torchrun --log-dir DIR --redirects 3 --tee 3), which say why it went"),
    "node_lost": (COLLECT_MORE, "{where} stopped with its agent and left no word: bring that host's kernel log of the "
                                "boot before (`journalctl -k -b -1`) and the scheduler's record of the node (`scontrol "
                                "show node NODE`, `sacct -j JOBID`, `kubectl describe node NODE`); drain it where they "
                                "show a fault (NODE_FAIL, an Xid, a kernel panic), restart elsewhere where it was "
                                "preempted"),
    "launcher_failed": (RESTART, "the launcher or its store failed and nothing points at a host or the code: run it "
                                 "again"),
    "setup_failed": (FIX_CONFIG, "NCCL or the host could not set up the communicator: a setting of the job or its "
                                 "hosts"),
    "missing_ranks": (COLLECT_MORE, "the ranks the others waited for left no input, and the culprit is among them: "
                                    "bring the logs of {missing} and their hosts' kernel logs (dmesg -T)"),
    "lagging_unexplained": (COLLECT_MORE, "{culprits} never arrived and no line of {its} says why (slow, stuck or "
                                          "dead without a word): bring {its} stack while it hangs (`py-spy "
                                          "dump --pid PID`, or `ncclcheck snapshot` on its node) and {its} "
                                          "flight-recorder dump (TORCH_NCCL_TRACE_BUFFER_SIZE=2000, "
                                          "TORCH_NCCL_DUMP_ON_TIMEOUT=1)"),
    "lagging_no_input": (COLLECT_MORE, "the others waited for {culprits}, whose own input is not here: bring {its} log "
                                       "and its host's kernel log (dmesg -T)"),
    "died_silently": (COLLECT_MORE, "{culprits} stopped without a word while the others lost {its}: what killed {it} "
                                    "is in {its} host's kernel log (dmesg -T) and the scheduler's record: bring them"),
    "nccl_error_unexplained": (COLLECT_MORE, "NCCL failed on {culprits} and no line says why: rerun with "
                                             "NCCL_DEBUG=WARN (or NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET) and bring "
                                             "the WARN lines"),
    "failed_unexplained": (COLLECT_MORE, "{culprits} ended without an error of {its} own in these inputs (an exit "
                                         "status, a signal): bring {its} whole stderr (torchrun --log-dir DIR "
                                         "--redirects 3 --tee 3) and {its} host's kernel log (dmesg -T)"),
    "failure_unnamed": (COLLECT_MORE, "a process failed and no line names its rank: bring the per-rank logs (torchrun "
                                      "--log-dir DIR --redirects 3 --tee 3) or lines with a [rankN]: prefix"),
    "all_ranks_stuck": (COLLECT_MORE, "every rank waited in the same collective and none is missing: the transport, "
                                      "NCCL itself or the ranks' calls; bring every rank's flight-recorder dump "
                                      "(TORCH_NCCL_TRACE_BUFFER_SIZE=2000, TORCH_NCCL_DUMP_ON_TIMEOUT=1) and a run with "
                                      "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"),
    "timeouts_not_in_inputs": (COLLECT_MORE, "the launcher's summary says the ranks were aborted after a timeout, and "
                                             "the timeout lines are not in these inputs: bring the ranks' own logs "
                                             "(torchrun --log-dir DIR --redirects 3 --tee 3)"),
    "watchdog_stuck": (COLLECT_MORE, "the watchdog thread of {culprits} was stuck (a CUDA call or the GIL blocked): "
                                     "bring {its} native stack while it hangs (`py-spy dump --native --pid PID`) and "
                                     "that host's kernel log (dmesg -T) for an Xid"),
    "no_failure": (COLLECT_MORE, "these inputs show no failure: if the job did fail, bring the failing attempt's logs "
                                 "of every rank (with NCCL_DEBUG=WARN), its launcher's console and its hosts' kernel "
                                 "logs"),
    "node_unnamed": (COLLECT_MORE, "{what}, and no input names the host it happened on: bring the ranks' NCCL lines "
                                   "(NCCL_DEBUG=INFO names each rank's host) or the hosts' kernel logs"),
    # The class is the mechanism's own (job/statements.toml's `class`); this one stands for the table's entries.
    "stated_mechanism": (FIX_CONFIG, "the quoted line names its mechanism ({what}): the fix for it comes first"),
    # A line the table does not word but whose layer under NCCL is known (job/layers.py): the layer's class.
    "stated_layer": (FIX_CONFIG, "the quoted line says where under NCCL it failed ({what}): that layer's setting and the "
                                 "run that isolates it come first"),
    "several_hosts": (RESTART, "{what}, reported on {hosts} hosts: nothing points at one of them; run it again, and "
                               "if it repeats between the same hosts, drain them"),
}


def decide_action(job: Job, d: Decision) -> Action:
    """The verdict's one action: its cause's (refined where the evidence decides), else the verdict kind's; never a
    restart where a culprit's own code raised."""
    action = _from_cause(job, d) if d.cause is not None else _from_kind(job, d)
    if nodeloss.is_lost(job, d.kind, d.culprits, d.cause):
        lost = job.facts.lost_nodes[0]
        action = _table("node_lost", job, lost.ranks, where=nodeloss.where(lost))
        action = Action(action.kind, action.reason, action.why, Node(lost.host, None, lost.ranks) if lost.host else None)
    culprits = set(d.culprits)
    raised = [s.rank for s in job.ranks if s.rank in culprits and s.ending.kind is EndKind.EXCEPTION]
    if action.kind == RESTART and raised:
        action = _table("user_exception", job, raised)
    if action.kind == FIX_CODE and job.facts.relaunches:
        n = len(job.facts.relaunches)
        action = Action(action.kind, action.reason, f"{action.why} (the launcher's {n} restart{'s' if n > 1 else ''} "
                        "ran the same code into the same failure)", action.node)
    return action


def _from_cause(job: Job, d: Decision) -> Action:
    assert d.cause is not None
    c = d.cause.cause
    ranks = tuple(d.cause.ranks) or d.culprits
    if c.family == LATE and d.busy is not None:  # the late rank's last line says it was only busy
        return _table("busy_rank", job, [d.busy.rank] if d.busy.rank is not None else [])
    if c.kind == "stated_reason" and (said := d.cause.said) is not None and said.action != DRAIN_NODE:
        # the quoted line's mechanism is in the table of stated lines: its class, not "bring more"
        act = _table("stated_layer" if said.located else "stated_mechanism", job, ranks, what=said.means)
        return Action(said.action, act.reason, act.why)
    if c.kind == "ib_error" and (said := d.cause.said) is not None and said.action != DRAIN_NODE:
        # the completion's status names its mechanism (job/statements.toml): a flushed request is an earlier error's
        # echo, a local protection error GPUDirect RDMA's path; only a retry that ran out points at a link to drain
        act = _table("stated_mechanism", job, ranks, what=said.means)
        return Action(said.action, act.reason, act.why)
    if c.action == DRAIN_NODE:
        nodes = _nodes(job, d, ranks)
        named = [n for n in nodes if n.host or n.gpu_bus_id]
        hosts = {n.host for n in named if n.host}
        what = f"{c.title} ({c.kind})"
        if len(hosts) > 1 and c.kind == "ib_error":  # both ends of a link report it: no one host is shown at fault
            return _table("several_hosts", job, ranks, what=what, hosts=str(len(hosts)))
        if not named:
            return _table("node_unnamed", job, ranks, what=what)
        return Action(DRAIN_NODE, c.kind, c.action_why, named[0])
    host = _host(job, ranks) if c.action == COLLECT_MORE else None
    where = f" ({rank_phrase(ranks)} ran on {host})" if host else ""  # whose logs to bring, where the inputs say it
    return Action(c.action, c.kind, c.action_why + where)


def _from_kind(job: Job, d: Decision) -> Action:
    by_rank = {s.rank: s for s in job.ranks}
    culprits = list(d.culprits)
    endings = {by_rank[r].ending.kind for r in culprits if r in by_rank}
    k = d.kind
    if k in (VerdictKind.COLLECTIVE_MISMATCH, VerdictKind.DEADLOCK):
        return _table(k.value, job, culprits)
    if k is VerdictKind.LAGGING_RANK:
        if d.busy is not None:
            return _table("busy_rank", job, culprits)
        return _table("lagging_no_input" if endings == {EndKind.UNKNOWN} else "lagging_unexplained", job, culprits)
    if k is VerdictKind.WATCHDOG_STUCK:
        hung = culprits or sorted({h.who.rank for h in job.facts.heartbeats if h.who.rank is not None})
        return _table("exit_teardown" if not culprits and job.facts.exit_teardown else "watchdog_stuck", job, hung)
    if k is VerdictKind.RANK_FAILED_FIRST:
        if EndKind.EXCEPTION in endings:
            return _table("user_exception", job, [r for r in culprits if by_rank[r].ending.kind is EndKind.EXCEPTION])
        if endings == {EndKind.SILENT}:
            return _table("died_silently", job, culprits)
        return _table("failed_unexplained" if culprits else "failure_unnamed", job, culprits)
    if k is VerdictKind.NCCL_ERROR:
        if endings == {EndKind.SILENT} and not any(x.source == "watchdog" for x in job.facts.stated):  # a tear-down
            # line is a word (job/stated.py)
            return _table("died_silently", job, culprits)
        if culprits:
            return _table("nccl_error_unexplained", job, culprits)
        absent = [s.rank for s in job.ranks if not s.present]
        if absent or any(not p.ranks for p in job.facts.peers_lost):
            return _table("missing_ranks", job, absent, missing=_missing(job, absent))
        errs = [s for s in job.ranks if s.ending.kind is EndKind.NCCL_ERROR]
        if errs and all(s.ending.gone is not None for s in errs):  # each says a peer went away
            return _table("peer_lost", job, [s.rank for s in errs])
        return _table("transport_failed", job, culprits)
    if k is VerdictKind.SETUP_FAILURE:
        return _table("setup_failed", job, culprits)
    if k is VerdictKind.LAUNCHER_FAILURE:
        return _table("launcher_failed", job, culprits)
    if k is VerdictKind.ALL_RANKS_STUCK:
        return _table("all_ranks_stuck" if d.primary is not None else "timeouts_not_in_inputs", job, culprits)
    if k is VerdictKind.INCOMPLETE:
        absent = list(d.unknown) or [s.rank for s in job.ranks if not s.present]
        action = _table("missing_ranks", job, absent, missing=_missing(job, absent))
        if (b := d.unnamed_busy) is not None:  # frameworks print progress on rank 0 alone: it may be the one waited for
            action = Action(action.kind, action.reason, f"{action.why}; a process was busy meanwhile ({b.loc}, a line "
                            "that names no rank): if it is the rank they waited for, give that phase a longer timeout")
        return action
    return _table("no_failure", job, culprits)


def _table(reason: str, job: Job, ranks: Sequence[int], **said: str) -> Action:
    """The table's action, its sentence said of these ranks."""
    kind, why = TABLE[reason]
    one = len(ranks) == 1
    words = {"culprits": rank_phrase(ranks, job.world) if ranks else "the rank",
             "its": "its" if one or not ranks else "their",
             "it": "it" if one or not ranks else "them", "missing": "", **said}
    return Action(kind, reason, why.format(**words))


def _missing(job: Job, absent: Sequence[int]) -> str:
    """The ranks without input, as ranges; a stated world's unlisted ranks by count."""
    parts = [rank_phrase(absent, job.world)] if absent else []
    if job.unlisted:
        parts.append(f"the {job.unlisted_count:,} ranks of the stated world that no input names")
    return " and ".join(parts) or "the other members of the group they waited in (no input names them)"


def _nodes(job: Job, d: Decision, ranks: Iterable[int]) -> list[Node]:
    """The node of the cause as the evidence states it: the host records the cause quotes (their host or pod and GPU
    bus, else their ranks' host), then the cause's ranks' hosts from their own lines."""
    assert d.cause is not None
    out: list[Node] = []
    quoted = set(d.cause.locs)
    for j in job.facts.host_records:
        if j.event.loc not in quoted:
            continue
        host = j.event.host or j.event.pod or _host(job, j.ranks)
        out.append(Node(host, j.event.bus, tuple(j.ranks)))
    by_host: dict[str | None, list[int]] = {}
    for r in ranks:
        by_host.setdefault(_host(job, [r]), []).append(r)
    out += [Node(h, None, tuple(rs)) for h, rs in by_host.items()]
    return out


def _host(job: Job, ranks: Iterable[int]) -> str | None:
    """The ranks' one host as their lines print it (the full name over its short form, a name over an address);
    None where the inputs place them nowhere or on several hosts."""
    names = [job.facts.hosts.get(r, frozenset()) for r in ranks]
    if not names or not all(names):
        return None
    best = {max(sorted(n), key=lambda x: (not _ADDRESS.search(x), len(x))) for n in names}
    return best.pop() if len(best) == 1 else None
