"""An input that ends on an error line of a form no source reads, where nothing else failed (issue 41 section 1).

The rules and the catalogue read the forms they know; a job runs more libraries than they name. Where they found no
failure at all, a line near the end of an input that states an error in words (evidence/formats/unread.py) means the
evidence is incomplete, not that nothing failed: the report quotes it and says what is known of it, its words.
"""

from __future__ import annotations

from dataclasses import replace

from ncclcheck.job.causes import Diagnosis, cause
from ncclcheck.job.model import Job, VerdictKind
from ncclcheck.job.reasons import ranked
from ncclcheck.job.rules import Decision
from ncclcheck.job.statements import explained

# The cause an error line of no source's form is, where the table of stated lines does not know its words
# (job/catalogue/error_unread.toml).
UNREAD = cause("error_unread")


def unread_error(job: Job, d: Decision) -> Decision:
    """Where no rule and no cause found a failure (``no_failure``), an input that ends on an error line of a form no
    source reads (evidence/formats/unread.py): the evidence is incomplete, and the line is quoted as what the job
    itself said (issue 41 section 1: never ``no_failure`` while such a line stands). Where the table of stated lines
    knows its words, the line's mechanism is the cause and its kind the verdict's; no rank is named a culprit (the
    line may not have ended anything). After the rules that read a failure or a wait of a known form, ahead of those
    that read a stop with no failure line (a set-up that stops, a console cut off or stalled): where such a line
    stands, a report must not say that no line says the job failed."""
    lines = ranked([x for x in job.facts.stated if x.source == "unread"])
    if d.kind is not VerdictKind.NO_FAILURE or d.cause is not None or not lines:
        return d
    first, more = lines[0], lines[1:]
    said = explained(first.text, first.file)
    also = (f" {len(more)} more such line{'s' if len(more) > 1 else ''} follow{'' if len(more) > 1 else 's'} "
            f"({', '.join(str(x.loc) for x in more[:3])}{', ...' if len(more) > 3 else ''}).") if more else ""
    summary = (f"No failure of a form ncclcheck reads is in these inputs, but a line near the end of one reports an "
               f"error in a form it does not read: \"{first.text}\" ({first.loc}). Its words are all it says: these "
               f"inputs do not show whether it ended the job.{also}")
    locs = tuple(x.loc for x in lines)[:8]
    kind = VerdictKind(said.kind) if said is not None and said.kind else VerdictKind.INCOMPLETE
    if said is not None and said.cause:
        found = Diagnosis(cause(said.cause), (), first.text, first.loc, locs, f"{first.label}: {first.text}; "
                          f"{said.means}", first.clock_s)
    else:
        found = Diagnosis(UNREAD, (), first.text, first.loc, locs, f"{first.label}: {first.text}", first.clock_s, said)
    return replace(d, kind=kind, summary=summary, cause=found)
