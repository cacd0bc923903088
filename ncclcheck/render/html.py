"""The incident report as one self-contained HTML page: verdict, chain, per-rank timeline, findings, evidence.

The page opens from a ticket attachment: no network, no external assets, inline CSS and a few lines
of script only, and a Content-Security-Policy that allows nothing else (the style and the script are
pinned by hash, so markup smuggled in through a log line could not run even if escaping failed).
Every string that came from an input is escaped.  Ranks in the same state share one row of the
timeline, whatever the job's size; each row unfolds into its ranks.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from html import escape

from ncclcheck import __version__
from ncclcheck.evidence.types import Loc
from ncclcheck.findings import Finding
from ncclcheck.job.model import Analysis, Edge, EndKind, Group, GroupId, Job, Position, RankState, VerdictKind
from ncclcheck.ranks import compact, rank_phrase
from ncclcheck.render.timeline import STATES, Slot, collective_slot, p2p_slots, short_op, top_seq

WINDOW = 6  # collective numbers per group shown before the latest
MAX_COLS = 10  # at most this many numbers per group, however far apart the ranks are
P2P_KEEP = 6  # sends and receives per group shown
MAX_ROWS = 40  # above this, rows stop telling apart whom their ranks wait for

_LEGEND = {
    "completed": "completed",
    "started": "started (running on the GPU)",
    "scheduled": "scheduled (enqueued, not started)",
    "stuck": "stuck: the work the rank hangs in",
    "failed": "failed with an error",
    "not_issued": "never issued",
    "unknown": "not in the inputs",
    "silent": "not in its input (its log was read and says nothing of it)",
    "absent": "not a member",
}

_ROLE = {"culprit": "culprit", "waiting": "waiting", "unknown": "no input", "": ""}

_CSS = """
:root{--bg:#f5f6f8;--card:#fff;--ink:#1d2330;--mute:#5b6475;--line:#dfe3ea;--red:#c62828;--redbg:#fdecea;
--green:#7cc291;--blue:#5c9ded;--amber:#e08a1e;--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,sans-serif}
main{max-width:1240px;margin:0 auto;padding:20px 24px 48px}
header{display:flex;flex-wrap:wrap;align-items:baseline;gap:8px 20px;margin-bottom:14px}
header h1{font-size:18px;margin:0;font-weight:650}
header .meta{color:var(--mute);font-size:13px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px 18px;margin:14px 0}
h2{font-size:15px;margin:0 0 10px;font-weight:650}
h2 small{font-weight:400;color:var(--mute);margin-left:8px}
code,.mono{font-family:var(--mono);font-size:12.5px}
a{color:#1f5fbf}
sup.ev a{text-decoration:none;font-size:11px;margin-left:2px}
.verdict{border-left:6px solid var(--red)}
.verdict.ok{border-left-color:#2e7d32}
.kind{display:inline-block;font:600 12px/1 var(--mono);letter-spacing:.04em;text-transform:uppercase;color:#fff;
background:var(--red);padding:5px 8px;border-radius:4px;margin-right:10px}
.ok .kind{background:#2e7d32}
.summary{font-size:15px;margin:10px 0 12px}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px;margin:0}
.facts dt{color:var(--mute)}
.facts dd{margin:0;font-family:var(--mono);font-size:13px}
.facts dd.culprit{color:var(--red);font-weight:700}
ol.chain{list-style:none;margin:0;padding:0}
ol.chain li{position:relative;padding:6px 10px 6px 30px;margin:0 0 6px;border-radius:6px;background:#f3f5f9}
ol.chain li:before{content:"";position:absolute;left:12px;top:12px;width:8px;height:8px;border-radius:50%;
background:var(--blue)}
ol.chain li:not(:last-child):after{content:"";position:absolute;left:15px;top:22px;bottom:-10px;width:2px;
background:var(--line)}
ol.chain li.root{background:var(--redbg);font-weight:600}
ol.chain li.root:before{background:var(--red)}
ol.chain li.note{background:none;color:var(--mute)}
ol.chain li.note:before{background:var(--line)}
.legend{display:flex;flex-wrap:wrap;gap:6px 14px;margin:0 0 10px;color:var(--mute);font-size:12px}
.legend span{display:inline-flex;align-items:center;gap:5px}
.legend i{width:14px;height:12px;border-radius:3px;display:inline-block}
.tools{display:flex;gap:8px;align-items:center;margin:0 0 10px;font-size:12px;color:var(--mute)}
.tools input{font:inherit;padding:3px 6px;width:8em;border:1px solid var(--line);border-radius:4px}
.tools button{font:inherit;padding:3px 8px;border:1px solid var(--line);border-radius:4px;background:#fff;
cursor:pointer}
.tl{overflow-x:auto}
.tl .hd,.tl summary{display:grid;align-items:center;column-gap:3px}
.tl .hd{font-size:11.5px;color:var(--mute);padding:0 6px 4px}
.tl .hd .lane{font-weight:600;color:var(--ink);border-bottom:2px solid var(--line);padding-bottom:2px;
white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.tl .hd .num{text-align:center;font-family:var(--mono)}
.tl details{border-top:1px solid var(--line)}
.tl summary{list-style:none;cursor:pointer;padding:5px 6px}
.tl summary::-webkit-details-marker{display:none}
.tl summary:hover{background:#f3f6fb}
.tl details.culprit>summary{background:var(--redbg);box-shadow:inset 4px 0 0 var(--red)}
.tl .who{font-family:var(--mono);font-size:12.5px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.tl .who b{font-weight:700}
.tl .who .n{color:var(--mute);font-size:11px;margin-left:4px}
.tl summary .who:before{content:"\\25B8";color:var(--mute);margin-right:5px;display:inline-block}
.tl details[open]>summary .who:before{transform:rotate(90deg)}
.role{font-size:11px;font-weight:600;border-radius:3px;padding:1px 5px;margin-right:4px;white-space:nowrap}
.role.culprit{background:var(--red);color:#fff}
.role.waiting{background:#e7edf7;color:#2a4a80}
.role.unknown{background:#eee;color:#555}
.end{font-size:11.5px;color:var(--mute);white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.c{height:22px;border-radius:3px;font:600 10.5px/22px var(--mono);text-align:center;overflow:hidden;
white-space:nowrap}
.s-completed{background:var(--green);color:#0d3b1e}
.s-started{background:var(--blue);color:#fff}
.s-scheduled{background:#fff;border:2px dashed var(--blue);color:#2a4a80;line-height:18px}
.s-stuck{background:var(--red);color:#fff;box-shadow:0 0 0 2px #f8b4b4}
.s-failed{background:var(--amber);color:#fff}
.s-not_issued{background:#fff;border:1px dotted #b8c0cc}
.s-unknown{background:repeating-linear-gradient(135deg,#e3e6eb 0 4px,#f6f7f9 4px 8px)}
.s-silent{background:repeating-linear-gradient(135deg,#f1e3c8 0 4px,#fbf6ec 4px 8px)}
.s-absent{background:none}
.legend .s-absent{border:1px solid var(--line)}
.waits{font-size:11.5px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;padding-left:6px}
.members{margin:2px 0 8px 24px;padding:0;list-style:none;font-size:12.5px;max-height:320px;overflow:auto}
.members li{padding:1px 0}
.members li:target,.members li.hit{background:#fff4c2}
.members .mono{color:var(--mute)}
.findings{list-style:none;margin:0;padding:0}
.findings li{padding:8px 0;border-top:1px solid var(--line)}
.findings li:first-child{border-top:none}
.sev{display:inline-block;font:600 11px/1 var(--mono);text-transform:uppercase;padding:3px 6px;border-radius:3px;
margin-right:6px}
.sev.error{background:var(--red);color:#fff}.sev.warning{background:#f6c453;color:#4a3500}
.sev.info{background:#dbe7f8;color:#234}
.code{font-family:var(--mono);font-size:12px;color:var(--mute);margin-right:6px}
.fix{margin-top:4px;color:#2d4a2d}
.fix:before{content:"fix: ";font-weight:600}
ol.steps li{margin:4px 0}
pre.cmd{font:12px/1.5 var(--mono);background:#f3f5f9;border:1px solid var(--line);border-radius:5px;padding:6px 10px;
margin:6px 0;white-space:pre;overflow-x:auto}
ol.evidence{font-family:var(--mono);font-size:12.5px;margin:0;padding-left:3.2em}
ol.evidence li:target{background:#fff4c2}
.inputs{font-family:var(--mono);font-size:12px;color:var(--mute);columns:2 380px;margin:0;padding-left:1.2em}
.problems li{color:var(--red)}
footer{color:var(--mute);font-size:12px;text-align:center}
"""

_JS = """
(function(){
  var box=document.getElementById('find'),msg=document.getElementById('findmsg');
  function find(){
    var n=box.value.trim(),el=document.getElementById('rank-'+n);
    var hit=document.querySelector('.members li.hit');if(hit){hit.classList.remove('hit');}
    if(!/^[0-9]+$/.test(n)||!el){msg.textContent=n?'no rank '+n+' in the timeline':'';return;}
    msg.textContent='';var d=el.closest('details');if(d){d.open=true;}
    el.classList.add('hit');el.scrollIntoView({block:'center'});
  }
  box.addEventListener('keydown',function(e){if(e.key==='Enter'){find();}});
  document.getElementById('findbtn').addEventListener('click',find);
  function all(open){document.querySelectorAll('.tl details').forEach(function(d){d.open=open;});}
  document.getElementById('openall').addEventListener('click',function(){all(true);});
  document.getElementById('closeall').addEventListener('click',function(){all(false);});
  var m=/^#rank-([0-9]+)$/.exec(location.hash);if(m){box.value=m[1];find();}
})();
"""


def _e(s: object) -> str:
    return escape(str(s), quote=True)


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


class _Evidence:
    """Every line a claim rests on, numbered in order of first citation; claims link to the list."""

    def __init__(self) -> None:
        self.order: dict[str, int] = {}

    def ref(self, items: Iterable[Loc | str | None]) -> str:
        out = []
        for item in items:
            if item is None:
                continue
            key = str(item)
            n = self.order.setdefault(key, len(self.order) + 1)
            out.append(f'<a href="#ev-{n}" title="{_e(key)}">[{n}]</a>')
        return f'<sup class="ev">{"".join(dict.fromkeys(out))}</sup>' if out else ""

    def html(self) -> str:
        if not self.order:
            return '<p class="meta">No claim above cites a line of the inputs.</p>'
        items = "".join(f'<li id="ev-{n}">{_e(key)}</li>' for key, n in self.order.items())
        return f'<ol class="evidence">{items}</ol>'


# ---------------------------------------------------------------------------------------------- timeline


@dataclass
class _Lane:
    """One column block of the timeline: the groups of one ID and description (siblings of a mesh share it)."""

    gid: GroupId
    p2p: bool
    cols: list[int] = field(default_factory=list)

    @property
    def label(self) -> str:
        base = GroupId(self.gid.id, None, self.gid.desc).label()
        return base + (" p2p" if self.p2p else "")


def _lane_key(g: GroupId, p2p: bool) -> tuple[str | None, str | None, bool]:
    return (g.id, g.desc, p2p)


def _lanes(job: Job) -> list[_Lane]:
    tops: dict[tuple[str | None, str | None, bool], list[int]] = defaultdict(list)
    stuck: dict[tuple[str | None, str | None, bool], list[int]] = defaultdict(list)
    gids: dict[tuple[str | None, str | None, bool], GroupId] = {}
    for s in job.ranks:
        for p in s.positions:
            top = top_seq(p)
            if top is not None:
                key = _lane_key(p.group, False)
                gids.setdefault(key, p.group)
                tops[key].append(top)
                if p.stuck is not None and not p.stuck.p2p and p.stuck.seq is not None:
                    stuck[key].append(p.stuck.seq)
            if any(w.p2p for w in p.works) or (p.stuck is not None and p.stuck.p2p):
                gids.setdefault(_lane_key(p.group, True), p.group)
    lanes = []
    for key, gid in gids.items():
        if key[2]:
            lanes.append(_Lane(gid, True, list(range(P2P_KEEP))))
            continue
        hi = max(tops[key])
        lo = max(1, min(hi - WINDOW + 1, min(stuck[key], default=hi) - 1))
        lanes.append(_Lane(gid, False, list(range(lo, min(hi, lo + MAX_COLS - 1) + 1))))
    # Lanes where ranks are stuck first, then by group ID.
    stuck_keys = {_lane_key(s.stuck.group, s.stuck.p2p) for s in job.ranks if s.stuck is not None}
    lanes.sort(key=lambda ln: (_lane_key(ln.gid, ln.p2p) not in stuck_keys, ln.gid.id or "", ln.gid.desc or "", ln.p2p))
    return lanes


def _position(s: RankState, lane: _Lane) -> Position | None:
    """The rank's position in the lane's groups; the one it is stuck in where it has several."""
    mine = [p for p in s.positions if _lane_key(p.group, lane.p2p) == _lane_key(lane.gid, lane.p2p)]
    return next((p for p in mine if p.stuck is not None), mine[0] if mine else None)


def _members_of(lane: _Lane, groups: Sequence[Group]) -> _Members | None:
    """Every member of the lane's groups; None where the inputs do not name all members of one of them."""
    mine = [g for g in groups if _lane_key(g.id, lane.p2p) == _lane_key(lane.gid, lane.p2p)]
    return _Members(mine) if all(g.exact for g in mine) else None


class _Members:
    """The members of some groups, each kept as it is (a range stays a range): ``rank in members``."""

    def __init__(self, groups: Sequence[Group]) -> None:
        self.spans = [g.members for g in groups if isinstance(g.members, range)]
        self.listed = {r for g in groups if not isinstance(g.members, range) for r in g.members}

    def __contains__(self, rank: int) -> bool:
        return rank in self.listed or any(rank in r for r in self.spans)


def _cells(s: RankState, lane: _Lane, members: _Members | None) -> list[Slot | None]:
    """The lane's columns for one rank; None where the rank is known not to be a member of those groups."""
    p = _position(s, lane)
    if p is None:
        member = members is None or s.rank in members or s.ending.kind is EndKind.UNKNOWN
        state = "silent" if s.files else "unknown"  # a rank whose log was read is not missing from the inputs
        return [Slot(c, state, None) if member else None for c in lane.cols]
    if lane.p2p:
        slots: list[Slot | None] = list(p2p_slots(p, len(lane.cols)))
        return [None] * (len(lane.cols) - len(slots)) + slots
    return [collective_slot(p, c) for c in lane.cols]


def _cell_key(c: Slot | None) -> tuple[object, ...]:
    if c is None:
        return ("absent",)
    w = c.work
    return (c.state, c.seq if c.p2p else None, None if w is None else (w.op, w.signature(), w.peer))


def _work_words(c: Slot, group: GroupId | None) -> str:
    w = c.work
    where = f"{group.label()} " if group is not None else ""
    num = f"{'p2p ' if c.p2p else ''}#{c.seq}" if c.seq is not None else "(no sequence number printed)"
    text = f"{where}{num}: {_LEGEND.get(c.state, c.state)}"
    if w is None:
        return text if c.state in ("unknown", "silent") else text + " (from the group's counters)"
    text += f"; {w.describe()}"
    if w.sizes:
        text += " [" + ", ".join("x".join(map(str, sz)) or "scalar" for sz in w.sizes) + "]"
    if w.dtypes:
        text += " " + "/".join(w.dtypes)
    if w.p2p and w.peer is not None:
        text += f", peer rank {w.peer}"
    if w.ran_for_ms is not None:
        text += f", ran for {w.ran_for_ms:,} ms"
    if w.timeout_ms is not None:
        text += f", timeout {w.timeout_ms:,} ms"
    if w.frame is not None:
        text += f"; issued by {w.frame}"
    if w.loc is not None:
        text += f"; {w.loc}"
    return text


def _cell_html(c: Slot | None, group: GroupId | None, who: str) -> str:
    if c is None:
        return '<div class="c s-absent" title="not a member of these groups"></div>'
    label = short_op(c.work) or ("#" + str(c.seq) if c.p2p and c.seq is not None else "")
    if c.state == "stuck" and not label:
        label = "stuck"
    return f'<div class="c s-{c.state}" title="{_e(who + ": " + _work_words(c, group))}">{_e(label)}</div>'


def _targets(job: Job) -> dict[int, tuple[int | None, ...]]:
    out: dict[int, set[int | None]] = defaultdict(set)
    for e in job.edges:
        out[e.waiter].add(e.target)
    return {w: tuple(sorted(t, key=lambda x: -1 if x is None else x)) for w, t in out.items()}


def _waits_words(targets: Sequence[int | None], world: int | None) -> str:
    named = [t for t in targets if t is not None]
    parts = [rank_phrase(named, world)] if named else []
    if None in targets:
        parts.append("members not named in the inputs")
    return " and ".join(parts)


def _role(s: RankState, culprits: set[int], waiting: set[int]) -> str:
    if s.rank in culprits:
        return "culprit"
    if s.ending.kind is EndKind.UNKNOWN:
        return "unknown"
    return "waiting" if s.rank in waiting else ""


def _timeline(a: Analysis, ev: _Evidence) -> tuple[str, str]:
    """The timeline's markup and the grid its rows share (as wide as the longest rank set needs)."""
    job, v = a.job, a.verdict
    if not job.ranks:
        return '<p class="meta">No rank is named in these inputs.</p>', ""
    lanes = _lanes(job)
    culprits, waiting = set(v.culprit_ranks), set(v.waiting_ranks)
    targets = _targets(job)
    lane_members = [_members_of(ln, job.groups) for ln in lanes]
    cells = {s.rank: [_cells(s, ln, m) for ln, m in zip(lanes, lane_members, strict=True)] for s in job.ranks}

    # role, how it ended, its cells lane by lane, whom it waits for
    def fold(with_targets: bool) -> dict[tuple[str, str, tuple[object, ...], tuple[int | None, ...]], list[RankState]]:
        rows: dict[tuple[str, str, tuple[object, ...], tuple[int | None, ...]], list[RankState]] = {}
        for s in job.ranks:
            key = (_role(s, culprits, waiting), s.ending.kind.value,
                   tuple(tuple(_cell_key(c) for c in lane) for lane in cells[s.rank]),
                   targets.get(s.rank, ()) if with_targets else ())
            rows.setdefault(key, []).append(s)
        return rows

    rows = fold(True)
    if len(rows) > MAX_ROWS:
        rows = fold(False)
    role_order = {"culprit": 0, "waiting": 1, "": 2, "unknown": 3}
    order = sorted(rows, key=lambda k: (role_order[k[0]], min(s.rank for s in rows[k])))
    groups = {(s.rank, _lane_key(ln.gid, ln.p2p)): p.group for s in job.ranks for ln in lanes
              if (p := _position(s, ln)) is not None}

    # Lane titles span their columns; numbers go on a second header line.
    lane_hd = ['<div class="hd"><div></div><div></div>']
    num_hd = ['<div class="hd"><div></div><div></div>']
    for i, ln in enumerate(lanes):
        lane_hd.append(f'<div class="lane span-{i}" title="{_e(_lane_title(job, ln))}">{_e(ln.label)}</div><div></div>')
        nums = [("#" + str(c)) if not ln.p2p else "" for c in ln.cols]
        if ln.p2p:
            nums[-1] = "latest"
        num_hd += [f'<div class="num">{n}</div>' for n in nums] + ["<div></div>"]
    lane_hd.append("<div></div></div>")
    num_hd.append('<div class="waits">waits for</div></div>')
    body = []
    for key in order:
        members = rows[key]
        role = key[0]
        first = members[0]
        ranks = [s.rank for s in members]
        who = rank_phrase(ranks, job.world)
        count = f'<span class="n">({len(ranks):,})</span>' if len(ranks) > 1 else ""
        badge = f'<span class="role {role}">{_ROLE[role]}</span>' if role else ""
        ending = first.ending.kind.value.replace("_", " ")
        row = [f'<details class="{role or "plain"}"><summary>',
               f'<div class="who" title="{_e(compact(ranks, job.world))}"><b>{_e(who)}</b>{count}</div>',
               f'<div class="end">{badge}{_e(ending)}</div>']
        sample = f"{who} (as on rank {first.rank})" if len(ranks) > 1 else who
        for ln, lane_cells in zip(lanes, cells[first.rank], strict=True):
            grp = groups.get((first.rank, _lane_key(ln.gid, ln.p2p)))
            row += [_cell_html(c, grp, sample) for c in lane_cells]
            row.append("<div></div>")
        waits = sorted({t for s in members for t in targets.get(s.rank, ())}, key=lambda x: -1 if x is None else x)
        words = _waits_words(waits, job.world) or ("no one (the root)" if role == "culprit" else "")
        row.append(f'<div class="waits">{_e(words)}</div></summary>')
        row.append(_members(members, targets, job.world, ev))
        row.append("</details>")
        body.append("".join(row))
    legend = "".join(f'<span><i class="s-{k}"></i>{_e(t)}</span>' for k, t in _LEGEND.items()
                     if k in STATES or k in ("absent", "silent"))
    tools = ('<div class="tools"><label for="find">find rank</label><input id="find" inputmode="numeric" '
             'placeholder="e.g. 517"><button id="findbtn" type="button">show</button>'
             '<button id="openall" type="button">expand all</button><button id="closeall" type="button">collapse all'
             '</button><span id="findmsg"></span></div>')
    sources = sorted({p.source for s in job.ranks for p in s.positions})
    src = {"dump": "flight-recorder dumps", "logs": "log counters"}
    note = " and ".join(src.get(x, x) for x in sources) or "no position in any group"
    labels = [rank_phrase([s.rank for s in rows[k]], job.world) + (f" ({len(rows[k]):,})" if len(rows[k]) > 1 else "")
              for k in order]
    # Rank sets print in a 12.5px monospace face: about half a rem a character, and room for the marker.
    css = _grid_css([len(ln.cols) for ln in lanes], min(19.0, max(6.0, 0.5 * max(map(len, labels)) + 1.5)))
    return css, (f'<div class="legend">{legend}</div>{tools}<div class="tl">'
            + "".join(lane_hd) + "".join(num_hd) + "".join(body)
            + f'</div><p class="meta">{len(job.ranks):,} ranks in {len(order)} rows (ranks in the same state share '
            f"a row; click a row for its ranks). States from {note}. Hover a cell for the work.</p>")


def _lane_title(job: Job, ln: _Lane) -> str:
    gs = [g for g in job.groups if _lane_key(g.id, ln.p2p) == _lane_key(ln.gid, ln.p2p)]
    n = len(gs)
    return f"{ln.label}: {n} group{'s' if n != 1 else ''}" + (f" ({', '.join(g.id.label() for g in gs[:4])}"
                                                              f"{', ...' if n > 4 else ''})" if gs else "")


def _members(members: Sequence[RankState], targets: dict[int, tuple[int | None, ...]], world: int | None,
             ev: _Evidence) -> str:
    items = []
    for s in members:
        waits = _waits_words(targets.get(s.rank, ()), world)
        files = ", ".join(s.files[:3]) + (f" and {len(s.files) - 3} more" if len(s.files) > 3 else "")
        text = f"rank {s.rank}: {s.ending.kind.value.replace('_', ' ')}"
        if s.ending.detail:
            text += f" ({s.ending.detail})"
        if waits:
            text += f"; waits for {waits}"
        items.append(f'<li id="rank-{s.rank}">{_e(text)}{ev.ref([s.ending.loc])}'
                     + (f' <span class="mono">{_e(files)}</span>' if files else "") + "</li>")
    return f'<ul class="members">{"".join(items)}</ul>'


# ---------------------------------------------------------------------------------------------- the page


def _chain(a: Analysis, ev: _Evidence) -> str:
    v, job = a.verdict, a.job
    if not v.chain:
        return '<p class="meta">No rank waits for another in these inputs.</p>'
    roots = set(v.culprit_ranks)
    items = []
    for line in v.chain:
        locs = _chain_evidence(line, job.edges, job, roots)
        is_root = any(line.startswith(f"rank {r} ") for r in roots) and " waits in " not in line
        note = line.endswith("only waiting.")
        cls = "root" if is_root else "note" if note else ""
        items.append(f'<li class="{cls}">{_e(line)}{ev.ref(locs)}</li>')
    return f'<ol class="chain">{"".join(items)}</ol>'


def _by_work(edges: Sequence[Edge]) -> dict[tuple[GroupId, int | None], list[Edge]]:
    out: dict[tuple[GroupId, int | None], list[Edge]] = defaultdict(list)
    for e in edges:
        out[(e.work.group, e.work.seq)].append(e)
    return out


def _chain_evidence(line: str, edges: Sequence[Edge], job: Job, roots: set[int]) -> list[Loc]:
    """The lines behind one chain line: the stuck works of the waiters it names, or the root's ending."""
    head = line.split(" wait", 1)[0]
    named = set(map(int, re.findall(r"\d+", head)))
    matches = []
    for (g, seq), group_edges in _by_work(edges).items():
        where = (f"{g.label()} #{seq} ", f"groups {GroupId(g.id, None, g.desc).label()} #{seq} ")
        if any(w in line for w in where):
            matches += group_edges
    locs: list[Loc | None] = [e.work.loc for e in ([e for e in matches if e.waiter in named] or matches)]
    for r in sorted(roots):
        s = job.rank(r)
        if s is not None and line.startswith(f"rank {r} ") and " waits in " not in line:
            locs.append(s.ending.loc)
    return list(dict.fromkeys(loc for loc in locs if loc is not None))[:6]


def _verdict(a: Analysis, ev: _Evidence) -> str:
    v, job = a.verdict, a.job
    ok = v.kind is VerdictKind.NO_FAILURE
    own = next((f for f in v.findings if f.code == v.kind.value.replace("_", "-")), None)
    refs = ev.ref(own.evidence) if own is not None else ""
    facts = []
    if v.culprit_ranks:
        facts.append(("culprit", compact(v.culprit_ranks, job.world), "culprit"))
    if v.waiting_ranks:
        facts.append(("only waiting", compact(v.waiting_ranks, job.world), ""))
    if v.unknown_ranks:
        facts.append(("no input from", compact(v.unknown_ranks, job.world), ""))
    if v.pg is not None:
        group = next((g.id for g in job.groups if g.id.to_pg() == v.pg), None)
        label = group.label() if group is not None else v.pg.label()
        facts.append(("collective", f"{label} #{v.seq}" if v.seq is not None else label, ""))
    if v.action is not None:
        facts.append(("action", v.action.words(), ""))
    dl = "".join(f'<dt>{_e(k)}</dt><dd class="{c}">{_e(val)}</dd>' for k, val, c in facts)
    return (f'<section class="verdict{" ok" if ok else ""}" id="verdict"><span class="kind">{_e(v.kind.value)}'
            f'</span><div class="summary">{_e(v.summary)}{refs}</div>'
            + (f'<dl class="facts">{dl}</dl>' if dl else "") + "</section>")


def _prose(text: str) -> str:
    """Escaped text whose `commands` become code, and whose ``export ...`` block sits on its own unwrapped line."""
    head, sep, cmd = text.partition(": export ")
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", _e(head))
    return out + (f':<pre class="cmd">export {_e(cmd)}</pre>' if sep else "")


def _findings(findings: Sequence[Finding], ev: _Evidence) -> str:
    if not findings:
        return '<p class="meta">Nothing more to say.</p>'
    items = []
    for f in findings:
        fix = f'<div class="fix">{_prose(f.fix)}</div>' if f.fix else ""
        items.append(f'<li><span class="sev {f.severity.value}">{f.severity.value}</span><span class="code">'
                     f"{_e(f.code)}</span>{_e(f.message)}{ev.ref(f.evidence)}{fix}</li>")
    return f'<ul class="findings">{"".join(items)}</ul>'


def _inputs(a: Analysis) -> str:
    files = "".join(f"<li>{_e(s.file)} <span>({'dump' if s.dump is not None else f'{s.lines:,} lines'})</span></li>"
                    for s in a.scans)
    problems = "".join(f"<li>{_e(p.file)}: {_e(p.message)}</li>" for p in a.problems)
    out = f'<ul class="inputs">{files}</ul>'
    if problems:
        out += f'<h2>Inputs not read, or read in part</h2><ul class="problems">{problems}</ul>'
    return out


def _grid_css(lanes_cols: Sequence[int], who_rem: float) -> str:
    cols = " ".join(f"repeat({n},minmax(2.3rem,1fr)) .6rem" for n in lanes_cols)
    rule = f".tl .hd,.tl summary{{grid-template-columns:{who_rem:g}rem 8rem {cols} minmax(8rem,1.4fr)}}\n"
    start = 3
    for i, n in enumerate(lanes_cols):
        rule += f".tl .span-{i}{{grid-column:{start}/span {n}}}\n"
        start += n + 1
    return rule


def report_html(a: Analysis) -> str:
    """The whole report as one HTML document."""
    ev = _Evidence()
    verdict = _verdict(a, ev)
    chain = _chain(a, ev)
    grid, timeline = _timeline(a, ev)
    verdict_code = a.verdict.kind.value.replace("_", "-")
    findings = _findings([f for f in a.verdict.findings if f.code != verdict_code], ev)  # that one is the verdict
    steps = "".join(f"<li>{_prose(s)}</li>" for s in a.verdict.next_steps)
    job = a.job
    css = _CSS + grid
    world = f"{job.world:,} ranks" if job.world else f"{len(job.ranks):,} ranks seen"
    present = sum(1 for s in job.ranks if s.present)
    meta = (f"{world} &middot; {present:,} with input &middot; {len(job.groups):,} process groups &middot; "
            f"{len(a.scans):,} inputs &middot; sizes assume {_e(a.dtype)}")
    csp = (f"default-src 'none'; style-src {_csp_hash(css)}; script-src {_csp_hash(_JS)}; "
           "base-uri 'none'; form-action 'none'")
    title = f"ncclcheck: {a.verdict.kind.value}"
    if a.verdict.culprit_ranks:
        title += f", {rank_phrase(a.verdict.culprit_ranks)}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<style>{css}</style></head>
<body><main>
<header><h1>ncclcheck incident report</h1><span class="meta">{meta}</span></header>
{verdict}
<section id="chain"><h2>Who waits for whom<small>from the farthest waiters to the root</small></h2>{chain}</section>
<section id="timeline"><h2>Timeline of the last collectives<small>per rank, per process group</small></h2>
{timeline}</section>
<section id="findings"><h2>Findings</h2>{findings}</section>
{f'<section id="next"><h2>Next steps</h2><ol class="steps">{steps}</ol></section>' if steps else ""}
<section id="evidence"><h2>Evidence<small>the input lines the claims above rest on</small></h2>{ev.html()}</section>
<section id="inputs"><h2>Inputs<small>{len(a.scans):,} read</small></h2>{_inputs(a)}</section>
<footer>ncclcheck {_e(__version__)}</footer>
</main><script>{_JS}</script></body></html>
"""
