"""The releases a job runs and the cross-rank table, in the text report and in the JSON (``job.versions``).

The text shows one line of releases and, where two ranks or inputs or more say something, how many aspects agree
across them and each one that does not, its values with who holds them (ranks as ranges). The findings say what
a difference does; the JSON carries every row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ncclcheck.job.versions import Versions, ranks_word, releases_line
from ncclcheck.probe.agree import Row, names, value_text

if TYPE_CHECKING:
    from rich.text import Text


def _values(row: Row) -> str:
    return " | ".join(f"{value_text(g.value)} ({names(g.members)})" for g in row.groups)


def versions_lines(v: Versions) -> list[Text]:
    """The releases, then the agreement across ranks: a line each, and a line per aspect that differs."""
    from rich.text import Text  # here, not at import: the JSON (versions_json) needs no Rich

    out = []
    if line := releases_line(v):
        out.append(Text(f"versions: {line}"))
    compared = v.compared
    if compared:
        differ = [r for r in compared if not r.agrees]
        members = tuple(dict.fromkeys(m for r in compared for g in r.groups for m in g.members))
        agree = len(compared) - len(differ)
        head = f"across {ranks_word(members)}: {agree} aspect{'s' if agree != 1 else ''} agree"
        out.append(Text(head + (f", {len(differ)} differ{'s' if len(differ) == 1 else ''}:" if differ else "")))
        out += [Text(f"  {r.aspect}: {_values(r)}") for r in differ]
    return out


def versions_json(v: Versions) -> dict[str, Any] | None:
    """Every aspect: its groups (value and who holds it, ranks as ranges), who cannot say, the odd ones out."""
    if not v.rows:
        return None
    return {
        "members": names(v.members),
        "aspects": [{
            "aspect": r.aspect,
            "agrees": r.agrees,
            "groups": [{"value": g.value, "members": names(g.members)} for g in r.groups],
            "unknown": names(r.unknown) if r.unknown else None,
            "odd": names(r.odd) if r.odd else None,
        } for r in v.rows],
    }
