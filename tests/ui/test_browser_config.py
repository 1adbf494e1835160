"""The scheduler configuration's page in Debian's headless Chromium (as tests/ui/test_browser.py
drives it): a Score weight edited and applied, the page then showing the new version and weight; the
same edit from a tab of the earlier version refused."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page

from .test_browser import DEMO, _serving, page, pytestmark  # noqa: F401 - the fixture and the skip


def _weight(tab: Page, plugin: str) -> str:
    return tab.inner_text(f"#score-weights-0 tr[data-plugin={plugin}] td:last-child")


def test_a_score_weight_edited_applied_and_a_stale_tabs_edit_refused(page: Page, tmp_path: Path) -> None:  # noqa: F811
    with _serving(DEMO) as server:
        page.goto(server + "/config")
        assert page.inner_text("#config-source").startswith("The run uses the KubeSchedulerConfiguration of: none given")
        assert _weight(page, "TaintToleration") == "3"
        browser = page.context.browser
        assert browser is not None
        stale = browser.new_page()  # another tab, on version 1
        stale.goto(server + "/config")
        text = page.input_value("#config-yaml")
        page.fill("#config-yaml", re.sub(r"(- name: TaintToleration\n\s+weight: )3", r"\g<1>7", text))
        page.click("#apply-config")
        page.wait_for_url("**/config?job=*", timeout=120_000)  # the job's page comes back here when done
        assert page.inner_text("#scenario-version") == "version 2"
        assert page.inner_text("#run-version") == "version 2"
        assert page.is_visible("#config-done")
        assert _weight(page, "TaintToleration") == "7"
        assert "TaintToleration (7)" in page.inner_text("#points-0 tr[data-point=score]")
        assert "KubeSchedulerConfiguration of: the configuration editor of this page." in page.inner_text("#config-source")
        # the tab still on version 1 edits another weight: refused, its text kept, nothing changed
        stale.fill("#config-yaml", re.sub(r"(- name: ImageLocality\n\s+weight: )1", r"\g<1>9",
                                          stale.input_value("#config-yaml")))
        stale.click("#apply-config")
        stale.wait_for_selector("#config-error")
        assert "the scenario is at version 2, and this edit was made on version 1" in stale.inner_text("#config-error")
        assert re.search(r"- name: ImageLocality\n\s+weight: 9", stale.input_value("#config-yaml"))
        page.reload()
        assert page.inner_text("#scenario-version") == "version 2"
        assert _weight(page, "TaintToleration") == "7" and _weight(page, "ImageLocality") == "1"
        page.screenshot(path=str(tmp_path / "config.png"), full_page=True)
