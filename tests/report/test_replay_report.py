"""``kubesched replay --report``: the HTML report as a reader sees it, in Debian's headless Chromium
driven by Playwright, on the audit log recorded from a real kube-apiserver (tests/replay/data) and on
the openb excerpt (a longer history, its per-pod table cut)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

if not os.environ.get("KUBESCHED_REQUIRE_BROWSER"):  # CI sets it: there, a missing extra fails
    pytest.importorskip("playwright.sync_api")
from playwright.sync_api import sync_playwright  # noqa: E402
from tests.report.test_browser import MEASURE  # noqa: E402

from kubesched.cli.main import cli  # noqa: E402
from kubesched.report import replay_report  # noqa: E402

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
if BROWSER is None and os.environ.get("KUBESCHED_REQUIRE_BROWSER"):
    raise RuntimeError("KUBESCHED_REQUIRE_BROWSER is set but no chromium is installed")
pytestmark = pytest.mark.skipif(BROWSER is None, reason="needs Debian's chromium (apt-get install chromium)")

DATA = Path(__file__).parent.parent / "replay" / "data"
LOG = DATA / "kube-apiserver-1.28.7-audit.log"

READ_PAGE = """() => ({
  measured: JSON.parse(document.body.getAttribute('data-measured')),
  headings: [...document.querySelectorAll('h2')].map(h => h.textContent),
  tables: [...document.querySelectorAll('table')].map(t =>
    [...t.querySelectorAll('tr')].map(r => [...r.querySelectorAll('td,th')].map(c => c.textContent))),
  text: document.body.innerText,
  wide: document.documentElement.scrollWidth > window.innerWidth,
})"""


def _report(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "replay.html"
    result = CliRunner().invoke(cli, ["replay", *args, "--report", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _open(path: Path) -> dict[str, Any]:
    page_file = path.with_name("measured.html")
    page_file.write_text(path.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=BROWSER, args=["--no-sandbox"])
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 900})
            tab.goto(page_file.as_uri())
            tab.wait_for_function("document.body.hasAttribute('data-measured')")
            seen: dict[str, Any] = tab.evaluate(READ_PAGE)
        finally:
            browser.close()
    return seen


def _table_after(seen: dict[str, Any], first_header: str) -> list[list[str]]:
    return next(t for t in seen["tables"] if t and t[0][0] == first_header)


def test_the_recorded_log_report_shows_agreement_waits_pending_and_every_pod(tmp_path: Path) -> None:
    seen = _open(_report(tmp_path, str(LOG), "--disable-preemption"))
    charts = {c["title"]: c for c in seen["measured"]}
    assert set(charts) == {"Time to bind by PriorityClass", "Pending pods over time"}
    for chart in charts.values():
        assert chart["cut"] == [] and chart["overlaps"] == 0, chart["title"]
    assert charts["Time to bind by PriorityClass"]["categories"] == ["batch-low", "online-high"]
    assert seen["headings"][:2] == ["Agreement with the recording", "Time to bind by PriorityClass (recorded → replay)"]
    agreement = {row[0]: row[1] for row in _table_after(seen, "")[1:] if len(row) == 2}
    assert agreement["bound or not by the end"] == "85.7% (12 of 14)"
    by_class = {row[0]: row for row in _table_after(seen, "PriorityClass")[1:]}
    assert by_class["online-high"][2] == "2 → 0" and by_class["all"][1] == "14"
    pods = _table_after(seen, "pod")[1:]
    assert len(pods) == 14
    assert [row[0] for row in pods[:8]] == sorted(row[0] for row in pods[:8])  # the 8 that differ, first
    assert {row[0] for row in pods[:8]} == {"default/web-1", "default/web-2", *(
        f"default/batch-n{n}-{i}" for n, i in [(1, 2), (1, 3), (2, 0), (2, 1), (2, 2), (2, 3)])}
    web1 = next(row for row in pods if row[0] == "default/web-1")
    assert (web1[3], web1[6], web1[9]) == ("n1", "not bound", "differs")
    assert "8 of 14 pod(s) differ from the recording" in seen["text"]
    assert not seen["wide"]  # the page fits the window: no sideways scrolling


def test_a_long_history_cuts_the_pod_table_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay_report, "POD_ROWS", 40)
    seen = _open(_report(tmp_path, str(DATA / "openb")))
    pods = _table_after(seen, "pod")[1:]
    assert len(pods) == 40
    assert "The first 40 rows are shown" in seen["text"] and "of 200 pod(s) differ" in seen["text"]
    for chart in seen["measured"]:
        assert chart["cut"] == [] and chart["overlaps"] == 0, chart["title"]
    assert seen["measured"][0]["categories"] == ["openb-be", "openb-burstable", "openb-guaranteed", "openb-ls"]
