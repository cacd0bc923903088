"""No unknown reaches a person: every report of every fixture, text and HTML, says what it does not know in words.

Python's None, JSON's null, nan and the bare placeholders "#?" and "PG ?" are what a missing value looks like when it
leaks through a format string; none of them may appear in the text report or the HTML page of any input kept here.
Two spans are the inputs' or the user's own words, not a leak: code in backticks (a command's output to compare, such
as `None` from `torch.version.cuda`) and a scheduler record's ``Key=(null)`` (scontrol prints unset fields so).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from analysed import analysed
from conftest import CONFORMANCE, DATA

from ncclcheck.render.html import report_html
from ncclcheck.render.report import report

ROOT = Path(__file__).parent.parent
LEAKS = re.compile(r"\bNone\b|(?<!=\()\bnull\b|\bnan\b|#\?|PG \?|\(\?\)")
_CODE = re.compile(r"`[^`\n]*`")
INPUTS = sorted(
    [*(DATA / "corpus").glob("*.log"), *(DATA / "failure_corpus").glob("*.log"), *(DATA / "failures").iterdir(),
     *(DATA / "real4").iterdir(), *(DATA / "real").iterdir(), *(DATA / "real_gloo").glob("*/attempt_0"),
     ROOT / "examples" / "incident-8rank", *(sorted(CONFORMANCE.glob("*.log")) if CONFORMANCE.is_dir() else []),
     *(DATA / "host" / "public").glob("*.log"), DATA / "host" / "xid", DATA / "host" / "real",
     *(d for d in (DATA / "launchers").glob("*/*") if (d / "WHAT.txt").exists()),
     *(DATA / "public_threads").glob("*.log")],
    key=str)


def _text(renderable) -> str:
    from rich.console import Console

    c = Console(width=100, record=True, file=open("/dev/null", "w"))  # noqa: SIM115 - closed with the console
    c.print(renderable)
    out = c.export_text()
    c.file.close()
    return out


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_unknown_leaks_into_any_report(path):
    a = analysed(path)  # run(path), shared with the other properties of every fixture (tests/analysed.py)
    text = _CODE.sub("", _text(report(a)))
    assert not LEAKS.findall(text), [line for line in text.splitlines() if LEAKS.search(line)][:5]
    page = html.unescape(re.sub(r"<script.*?</script>|<style.*?</style>|<code>.*?</code>|<[^>]+>", " ", report_html(a),
                                flags=re.S))
    assert not LEAKS.findall(page), [line for line in page.splitlines() if LEAKS.search(line)][:5]
