"""An old pod link after an edit renamed its pod, in Debian's headless Chromium (as
tests/ui/test_browser.py drives it): the link of version 1, followed once the edit's job is done,
lands on the same pod under its new name, whose page says what it was called."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page

from kubesched.testkit.builders import make_node, make_pod, make_replicaset
from kubesched.testkit.scenarios import create_step, scenario_document, write_scenario

from .test_browser import _serving, page, pytestmark  # noqa: F401 - the fixture and the skip
from .test_pod_links import EXTRA_JOB, WEB


def test_a_bookmarked_pod_link_lands_on_the_same_pod_after_an_edit(page: Page, tmp_path: Path) -> None:  # noqa: F811
    web = make_replicaset("web", 3, make_pod("web", cpu="1", namespace=None))
    path = write_scenario(tmp_path, [make_node("n1", cpu="4"), make_node("n2", cpu="4"), make_pod("solo", cpu="100m"),
                                     scenario_document(steps=[create_step("10s", web)], seed=1)])
    with _serving(str(path)) as url:
        page.goto(url + "/pods")
        rows = page.locator("#pods a.pod-link")
        links = dict(zip(rows.all_inner_texts(), rows.evaluate_all("links => links.map(a => a.getAttribute('href'))"),
                         strict=True))
        first = page.request.get(url + "/api/result").json()["pods"]
        (old,) = [k for k, p in first.items() if p["identity"] == f"{WEB}0"]
        page.goto(url + "/edit")
        page.fill("#edit-yaml", EXTRA_JOB)
        page.click("#apply-edit")  # its job's page, then (done) the edit page again
        page.wait_for_selector("#edit-done", timeout=120_000)
        assert page.inner_text("#run-version") == "version 2"
        second = page.request.get(url + "/api/result").json()["pods"]
        (new,) = [k for k, p in second.items() if p["identity"] == f"{WEB}0"]
        assert new != old

        page.goto(url + links[old])  # the bookmark of version 1
        assert page.inner_text("#pod-name") == new
        assert page.inner_text("#pod-renamed") == (f"This pod was {old} in version 1; it is {new} in version 2 "
                                                   f"(identity {WEB}0).")
        assert page.url.startswith(f"{url}/pods/{new}?id=")
