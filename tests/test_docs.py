"""The README is the entry point and short; every link in it and in docs/ leads somewhere that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    out = set()
    for line in text.splitlines():
        if line.startswith("#") and " " in line:
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def test_readme_is_an_entry_point():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 300
    quick = text.index("## Quick start")
    assert text.index("make demo", quick) < text.index("make test", quick) < text.index("## The commands")


def test_readme_names_every_command():
    """Each command ``ncclcheck --help`` lists is in the README, as the user types it."""
    from ncclcheck.cli import app

    text = (ROOT / "README.md").read_text()
    names = [c.name for c in app.registered_commands if not c.hidden]
    assert len(names) >= 5 and all(name for name in names)
    assert [n for n in names if f"ncclcheck {n}" not in text] == []


@pytest.mark.parametrize("command", ["analyze-log", "explain", "bench", "bench-compare", "probe", "snapshot"])
def test_help_examples_never_wrap(command):
    """A command's example in its --help is one line on an 80-column terminal: people paste it."""
    from typer.testing import CliRunner

    from ncclcheck.cli import app

    r = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    at = [i for i, line in enumerate(lines) if "ncclcheck " + command in line and ":" in line.split("ncclcheck")[0]]
    assert at, r.stdout
    for i in at:  # the line after an example is blank or a frame: nothing of the command ran over
        assert lines[i + 1].strip(" │") == "" or lines[i + 1].lstrip().startswith(("╭", "Then")), lines[i:i + 2]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_resolve(page):
    text = page.read_text()
    for target in _LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: {target}"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest.read_text()), f"{page.name}: {target}"


def test_every_doc_page_is_linked_from_the_readme():
    readme = (ROOT / "README.md").read_text()
    for page in PAGES[1:]:
        assert f"docs/{page.name}" in readme, page.name


def _stated() -> list[tuple[str, str, object]]:
    """Numbers the manual states, each with the constant it describes: (page, pattern with the number, value)."""
    from ncclcheck import schemas
    from ncclcheck.bench.report import SCHEMA_VERSION as BENCH
    from ncclcheck.cli import MANY_FILES
    from ncclcheck.evidence import bundle
    from ncclcheck.evidence.scan import PARALLEL_MIN_BYTES
    from ncclcheck.transfer import DEFAULT_DTYPE

    return [
        ("json.md", r"`schema_version` (\d+)", schemas.ANALYZE_LOG),
        ("json.md", r'\{"schema_version": (\d+)', schemas.ANALYZE_LOG),
        ("json.md", r'\{"ncclcheck_evidence": (\d+)', bundle.FORMAT),
        ("explain.md", r"`schema_version` (\d+)", schemas.EXPLAIN),
        ("snapshot.md", r"schema_version (\d+)", schemas.SNAPSHOT),
        ("probe.md", r"`--compare --format json`\*\* \(`schema_version` (\d+)", schemas.PROBE_COMPARE),
        ("bench.md", r"`schema_version` (\d+)", BENCH),
        ("analyze-log.md", r"assumed for the size arithmetic \(default `(\w+)`", DEFAULT_DTYPE),
        ("explain.md", r"the config's `torch_dtype`, else (\w+)\)", DEFAULT_DTYPE),
        ("analyze-log.md", r"inputs under (\d+) MiB are read in-process", PARALLEL_MIN_BYTES >> 20),
        ("analyze-log.md", r"or ([\d,]+) files or more, shows a progress bar", f"{MANY_FILES:,}"),
    ]


@pytest.mark.parametrize(("page", "pattern", "value"), _stated(), ids=lambda x: x if isinstance(x, str) else "")
def test_the_manual_states_the_numbers_the_code_uses(page, pattern, value):
    """A schema version or a default written in docs/ is the constant's value (the help once said 5 of a version 6)."""
    said = re.findall(pattern, (ROOT / "docs" / page).read_text())
    assert said, f"{page}: {pattern} not found"
    assert set(said) == {str(value)}, f"{page}: says {said}, the code {value}"
