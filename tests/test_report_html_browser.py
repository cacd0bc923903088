"""The incident report in a real browser: headless Chromium loads it without a console message, runs its script
under the page's own Content-Security-Policy, and shows the verdict and the culprit's row."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import DATA, run
from test_report_html import hostile

from ncclcheck.render.html import report_html

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="Chromium is not installed (Debian: apt-get install chromium)")


def load(page: Path, fragment: str, profile: Path) -> tuple[str, str]:
    """The DOM after the page's script ran, and the browser's console log."""
    assert BROWSER is not None
    cmd = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={profile}",
           "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri() + fragment]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout, r.stderr


def console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line or "violates" in line]


def test_real_incident_loads_clean_and_shows_the_culprit(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(report_html(run(DATA / "real4" / "tp_straggler")), encoding="utf-8")
    dom, log = load(page, "#rank-3", tmp_path / "profile")
    assert console(log) == []
    assert '<span class="kind">lagging_rank</span>' in dom
    culprit = re.search(r'<details class="culprit"( open="")?><summary>.*?</summary>', dom, re.S)
    assert culprit and "<b>rank 3</b>" in culprit[0] and '<span class="role culprit">culprit</span>' in culprit[0]
    # The script ran (its hash matches the policy): the link to rank 3 opened its row and marked it.
    assert culprit[1] == ' open=""'
    assert '<li id="rank-3" class="hit">' in dom


def test_hostile_input_runs_no_script_in_the_browser(tmp_path):
    """Markup in a log line stays text in the DOM: no injected element, no console message."""
    page = tmp_path / "report.html"
    html = report_html(run(hostile(tmp_path / "in")))
    assert "&lt;script&gt;" in html and "onerror=alert(2)" in html
    page.write_text(html, encoding="utf-8")
    dom, stderr = load(page, "", tmp_path / "profile")
    assert console(stderr) == []
    assert "<img" not in dom and "onerror=alert(2)" in dom
    assert "pwned" not in dom.split("<title>", 1)[1].split("</title>", 1)[0]
    assert dom.count("<script>") == 1
