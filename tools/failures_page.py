"""docs/failures.md's catalogue, generated from the cause files (ncclcheck/job/catalogue/*.toml).

The page's head (what analyze-log reads, the verdicts, the evidence) is written by hand above the marker line; every
word below it comes from the cause files, job/xids.py and job/statements.toml, so the page cannot drift from what the
tool matches.
tests/test_causes_data.py fails when the committed page differs from what this writes.

    python tools/failures_page.py          # rewrite the page below the marker
    python tools/failures_page.py --check  # exit 1 when the page is out of step
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ncclcheck.job import xids  # noqa: E402
from ncclcheck.job.causedata import Cause, read_catalogue  # noqa: E402
from ncclcheck.job.releases import regressions  # noqa: E402
from ncclcheck.job.statements import GENERIC, STATEMENTS  # noqa: E402

PAGE = ROOT / "docs" / "failures.md"
MARKER = ("<!-- Generated below this line from ncclcheck/job/catalogue/*.toml by tools/failures_page.py: edit a cause's "
          "file, then run it. -->")
HEADINGS = {"setup": "Set-up", "program": "Calls that disagree", "network": "Network",
            "launcher": "Launcher and store", "late": "A rank late to set-up", "device": "Device",
            "host": "Host and scheduler", "memory": "Memory"}
LINES = ("the lines the ranks and the launcher printed (error lines, NCCL WARN lines, the text under `Last error:`, "
         "store and launcher lines)")


def anchor(title: str) -> str:
    """GitHub's anchor of a heading (as tests/test_docs.py reads them)."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def _read_from(c: Cause) -> str:
    if c.page is not None and c.page.read:
        return c.page.read
    more = ""
    if c.records:
        more += f", and the host's and the scheduler's records of kind {', '.join(f'`{r}`' for r in c.records)}"
    if "mismatch" in c.events:
        more += ", and TORCH_DISTRIBUTED_DEBUG=DETAIL's mismatch report"
    return f"Read from any of these (case-insensitive) on {LINES}{more}:"


def _xid_table() -> list[str]:
    rows = ["| Xid | what happened | who acts | what to do |", "|---|---|---|---|"]
    rows += [f"| {code} | {what} | {who} | {do} |" for code, (what, who, do) in sorted(xids.XIDS.items())]
    return rows


def section(c: Cause) -> list[str]:
    """One cause's section: why, how it is read, notes, fix, the check, its source, examples."""
    assert c.page is not None
    out = [f"### `{c.kind}`: {c.title}", "", f"Why: {c.why[0].upper()}{c.why[1:]}.", ""]
    if c.written or (c.page.read is not None):
        out += [_read_from(c), ""]
    if c.written:
        out += ["```", *c.written, "```", ""]
    if c.signals:
        died = " or ".join(f"{s} (torchrun's `exitcode: -{signal.Signals[s].value}`)" for s in c.signals)
        out += [f"A launcher's report that a rank died of {died} with no line of its own is read as this cause too.", ""]
    if c.echo:
        out += ["Where a rank was killed by a signal, or stopped without a word while the others lost it, this is read as "
                "the echo of that death and the death is the cause.", ""]
    if c.page.notes:
        out += [c.page.notes, ""]
    out += ["Fix:", "", *(f"- {f}" for f in c.fix)]
    if c.probe:
        out.append("- `ncclcheck probe` inside the failing container checks this setting.")
    out += ["", f"Check: {c.check}", "", f"Action (`--json`'s `verdict.action`): `{c.action}`, {c.action_why}.", "",
            c.page.reference.replace("{source}", c.source), ""]
    if c.page.table == "xids":
        out += [*_xid_table(), ""]
    if c.examples:
        out += ["Example lines (each with where it is from):", ""]
        for e in c.examples:
            note = f"; {e.context}" if e.context else ""
            out.append(f"- `{e.line}` ({e.source}{note})" if "`" not in e.line else f"- ``{e.line}`` ({e.source}{note})")
        out.append("")
    return out


def _statements() -> list[str]:
    """The table of stated lines (job/statements.toml): what each line's words mean and fix, with its source."""
    out = ["## What a stated line means", "",
           "Where the failing line's words name a mechanism, [ncclcheck/job/statements.toml]"
           "(../ncclcheck/job/statements.toml) says what it means and how it is fixed, whichever cause quotes it: "
           "the quoted line (`verdict.stated`) takes this meaning, a cause whose line it is adds this fix (before "
           "its own where the entry says more than the cause), and a `stated_reason` takes this action class "
           "(`stated_mechanism`) and, where the line stands alone as a rank's failure, this verdict kind. The first "
           "entry whose pattern the line holds is the line's.", ""]
    for s in STATEMENTS:
        kind = f"`{s.kind}`" if s.kind else "the rules' own"
        out += [f"### `{s.id}`", "", f"Words: `{s.pattern.pattern}`", "", f"Means: {s.means}.", "",
                f"Verdict kind where the line stands alone: {kind}; action class: `{s.action}`.", "",
                "Its fix goes before the cause's own for " + ", ".join(f"`{c}`" for c in sorted(GENERIC | s.before))
                + "; after it for any other cause.", "", "Fix:", "",
                *(f"- {f}" for f in s.fix), "", f"Source: {s.source}.", ""]
    return out


def _regressions() -> list[str]:
    """What is left to rule out where no cause explains a failure (job/unexplained.py), and the table of releases
    with a known regression (job/regressions.toml), each entry with its source."""
    out = ["## Where no cause explains an NCCL failure", "",
           "Where no cause matches, or only one that says a failure happened (" + ", ".join(
               f"`{c}`" for c in sorted(GENERIC)) + ") with no stated line whose mechanism says more, an NCCL error or "
           "set-up failure gets three steps, in this order (job/unexplained.py): the releases (`releases-to-check` "
           "names those the logs state, most likely first; `releases-to-collect` says how to read them where none "
           "is stated: if it began after an upgrade, run the previous release; an NCCL or PyTorch much older than "
           "the driver, or built for a newer CUDA than it supports, is a suspect), the settings "
           "(`settings-to-unset`: every `NCCL_*` NCCL says the environment set, to unset one at a time; where none "
           "is stated, where to look and the debugging-only ones first), and the paths (`isolate-path`: one run each "
           "with NCCL_IB_DISABLE=1, NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1, and NCCL_DEBUG=INFO "
           "NCCL_DEBUG_SUBSYS=INIT,NET). A hang of every rank with no cause gets the releases' step only.", "",
           "### Releases with a known regression", "",
           "[ncclcheck/job/regressions.toml](../ncclcheck/job/regressions.toml): a release the job's lines state "
           "that is in this table is named (`known-regression`) where no cause explains the failure.", "",
           "| product | releases | fixed in | symptom | applies when | confirmed by |", "|---|---|---|---|---|---|"]
    for r in regressions():
        span = ".".join(map(str, r.first)) + ("" if r.first == r.last else "-" + ".".join(map(str, r.last)))
        when = r.when + (f" (only on {r.arch})" if r.arch else "")
        out.append(f"| {r.product.removesuffix(' version')} | {span} | {r.fixed} | {r.symptom} | {when} | "
                   f"[{r.source}]({r.source}); {r.confirmed} |")
    return [*out, ""]


def render(causes: Sequence[Cause]) -> str:
    """The page's generated part: the order the catalogue is read in, then every cause by family."""
    ordered = [c for c in causes if c.order is not None]
    ruled = [c for c in causes if c.order is None]
    out = [MARKER, "", "# The causes", "",
           "Each cause is one file in [ncclcheck/job/catalogue/](../ncclcheck/job/catalogue/) (its match, why, fix, "
           "the check that confirms it, its source and example lines); this part of the page is generated from "
           "them. The catalogue is read in this order, and the first cause whose lines or events the inputs show is "
           "the cause: device and memory errors first (they cause the NCCL and store errors that follow), then "
           "set-up failures, then the launcher and store, then calls that disagree, and a lost peer last (it is "
           "always a consequence).", "",
           "| order | cause | family | what |", "|---|---|---|---|"]
    out += [f"| {c.order} | [`{c.kind}`](#{anchor(f'`{c.kind}`: {c.title}')}) | {c.family} | {c.title} |" for c in ordered]
    out += ["", "Where none of them shows, these are named by rules of their own (job/causes.py's `diagnose`), each "
            "described in its section:", ""]
    out += [f"- [`{c.kind}`](#{anchor(f'`{c.kind}`: {c.title}')}): {c.title}" for c in ruled]
    out.append("")
    for family, heading in HEADINGS.items():
        members = [c for c in (*ordered, *ruled) if c.family == family]
        if members:
            out += [f"## {heading}", ""]
            for c in members:
                out += section(c)
    out += _statements()
    out += _regressions()
    return "\n".join(out).rstrip("\n") + "\n"


def page(causes: Sequence[Cause], current: str) -> str:
    """The whole page: its hand-written head (everything above the marker) and the generated rest."""
    head = current.split(MARKER)[0]
    return head + render(causes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/failures.md is out of step")
    args = parser.parse_args()
    current = PAGE.read_text()
    want = page(read_catalogue(), current)
    if args.check:
        if want != current:
            print(f"{PAGE} is out of step with the cause files: run python tools/failures_page.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(want)
    return 0


if __name__ == "__main__":
    sys.exit(main())
