"""The ui's safety in a real browser (Debian's headless Chromium through Playwright, the server on
uvicorn as ``kubesched ui`` runs it): a page of another site posting a form to the ui is refused and
deletes nothing; a second tab's edit of an earlier version is refused (starting no job) rather than
overwriting the first's; the edit form works from the page itself (through its job); a page of another
site cannot cancel a running job, the job's own page can; /docs renders with every other host
unreachable."""

from __future__ import annotations

import json
import os
import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

if not os.environ.get("KUBESCHED_REQUIRE_BROWSER"):  # CI sets it: there, a missing extra fails
    pytest.importorskip("fastapi")
    pytest.importorskip("playwright.sync_api")
from playwright.sync_api import BrowserContext, Route, sync_playwright  # noqa: E402

from .test_browser import BROWSER, DEMO, _serving  # noqa: E402

pytestmark = pytest.mark.skipif(BROWSER is None, reason="needs Debian's chromium (apt-get install chromium)")

EVIL = "http://evil.example"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with _serving(DEMO) as url:
        yield url


@pytest.fixture()
def offline(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[BrowserContext, list[str]]]:
    """A browser context that reaches 127.0.0.1 only (the page of evil.example it is given aside),
    and the addresses of every other request it tried."""
    tried: list[str] = []

    def only_here(route: Route) -> None:
        url = route.request.url
        if urlsplit(url).hostname == "127.0.0.1":
            route.continue_()
        elif url.startswith(EVIL + "/"):
            route.fulfill(status=200, content_type="text/html", body=request.node.evil_page)
        else:
            tried.append(url)
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=BROWSER, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.route("**/*", only_here)
        try:
            yield context, tried
        finally:
            report = getattr(request.node, "rep_call", None)
            if report is None or report.failed:
                for n, tab in enumerate(context.pages):
                    tab.screenshot(path=str(tmp_path / f"failure-{n}.png"), full_page=True)
            browser.close()


def _nodes(server: str) -> list[str]:
    with urllib.request.urlopen(server + "/api/objects") as answer:
        return [o["name"] for o in json.load(answer) if o["kind"] == "Node"]


def _jobs(server: str) -> list[dict]:
    with urllib.request.urlopen(server + "/api/jobs") as answer:
        return json.load(answer)


def _scenario(server: str) -> str:
    with urllib.request.urlopen(server + "/api/scenario.yaml") as answer:
        return answer.read().decode()


def test_another_sites_form_deletes_nothing(server: str, offline: tuple[BrowserContext, list[str]],
                                            request: pytest.FixtureRequest) -> None:
    context, _ = offline
    # the page a user visits elsewhere: it posts a delete to the ui as soon as it loads, with a token it guessed
    request.node.evil_page = f"""<!DOCTYPE html><html><body>
<form id="f" method="post" action="{server}/edit"><input name="action" value="delete"><input name="kind" value="Node">
<input name="namespace" value=""><input name="name" value="node-1"><input name="csrf_token" value="guessed">
<input name="version" value="1"></form><script>document.getElementById("f").submit()</script></body></html>"""
    before, jobs = _scenario(server), _jobs(server)
    tab = context.new_page()
    with tab.expect_navigation(url=server + "/edit"):
        tab.goto(EVIL + "/cats")
    text = tab.inner_text("body")
    assert text.startswith(f"refused: this change was sent by {EVIL}, not by a page of this server ({server})")
    assert "nothing was changed" in text
    assert "node-1" in _nodes(server) and _scenario(server) == before and _jobs(server) == jobs


def test_a_stale_tabs_edit_is_refused_and_the_form_works_from_the_page(
        server: str, offline: tuple[BrowserContext, list[str]]) -> None:
    context, _ = offline
    tab_a, tab_b = context.new_page(), context.new_page()
    for tab in (tab_a, tab_b):  # both open node-6 to edit, on the same version
        tab.goto(server + "/edit?kind=Node&name=node-6")
    shown = int(re.fullmatch(r"version (\d+)", tab_a.inner_text("#scenario-version")).group(1))
    original = tab_a.input_value("#edit-yaml")
    assert "name: node-6" in original
    tab_a.fill("#edit-yaml", original.replace("labels:\n", "labels:\n    team: a\n", 1))
    tab_a.click("#apply-edit")  # a job runs the edit: its page, then (done) the edit page again
    tab_a.wait_for_selector("#edit-done", timeout=60_000)
    assert tab_a.inner_text("#edit-done").startswith("applied Node node-6")
    assert tab_a.inner_text("#scenario-version") == f"version {shown + 1}"
    assert "team: a" in _scenario(server)

    tab_b.fill("#edit-yaml", original.replace("labels:\n", "labels:\n    team: b\n", 1))
    jobs = _jobs(server)
    tab_b.click("#apply-edit")
    tab_b.wait_for_selector("#edit-error")
    assert tab_b.inner_text("#edit-error").startswith(
        f"the scenario is at version {shown + 1}, and this edit was made on version {shown}: another tab")
    scenario = _scenario(server)
    assert "team: a" in scenario and "team: b" not in scenario  # tab A's edit stands
    assert "team: b" in tab_b.input_value("#edit-yaml")  # tab B's text is kept, to send again knowingly
    assert _jobs(server) == jobs  # refused before any job started

    # from the page it shows now (of the version there is), the same form goes through: the edit
    # form and the delete buttons work from the ui's own pages
    tab_b.click("#apply-edit")
    tab_b.wait_for_selector("#edit-done", timeout=60_000)
    assert "team: b" in _scenario(server) and "team: a" not in _scenario(server)
    tab_b.goto(server + "/edit?find=node-6")
    tab_b.click("tr.object-row[data-name='Node /node-6'] button.delete")
    tab_b.wait_for_selector("#edit-done", timeout=60_000)
    assert tab_b.inner_text("#edit-done").startswith("deleted Node node-6")
    assert "node-6" not in _nodes(server)


def _job(server: str, job_id: int) -> dict:
    with urllib.request.urlopen(f"{server}/api/jobs/{job_id}") as answer:
        return json.load(answer)


def _running_past(server: str, job_id: int, past: float = 0) -> float:
    """The simulated time a job has reached once it runs past ``past``."""
    deadline = time.monotonic() + 120
    while True:
        job = _job(server, job_id)
        assert job["state"] in ("queued", "running"), job
        if job["state"] == "running" and job["progress"].get("now", 0) > past:
            return float(job["progress"]["now"])
        assert time.monotonic() < deadline, job
        time.sleep(0.1)


def test_another_sites_page_cannot_cancel_a_job_and_the_job_page_can(
        tmp_path: Path, offline: tuple[BrowserContext, list[str]], request: pytest.FixtureRequest) -> None:
    from .test_jobs import CHURN, QUIET  # a cluster quiet until t=1e6, and pods that churn for days

    context, _ = offline
    (tmp_path / "quiet.yaml").write_text(QUIET)
    with _serving(str(tmp_path / "quiet.yaml")) as url:
        asked = urllib.request.Request(url + "/api/whatif", data=json.dumps({"apply": CHURN}).encode(),
                                       headers={"content-type": "application/json"})
        with urllib.request.urlopen(asked) as answer:  # as curl starts one
            job_id = json.load(answer)["id"]
        reached = _running_past(url, job_id)
        # a page elsewhere posts the job page's cancel form as soon as it loads (the token guessed)
        request.node.evil_page = f"""<!DOCTYPE html><html><body>
<form id="f" method="post" action="{url}/jobs/{job_id}/cancel"><input name="csrf_token" value="guessed"></form>
<script>document.getElementById("f").submit()</script></body></html>"""
        tab = context.new_page()
        with tab.expect_navigation(url=f"{url}/jobs/{job_id}/cancel"):
            tab.goto(EVIL + "/cats")
        text = tab.inner_text("body")
        assert text.startswith(f"refused: this change was sent by {EVIL}, not by a page of this server ({url})")
        _running_past(url, job_id, reached)  # it was not cancelled: it runs on
        # the job's own page, its form with its token, cancels it
        tab.goto(f"{url}/jobs/{job_id}")
        for _ in range(20):  # the page reloads itself every second: a reload may come under the click
            if tab.locator("#job-cancelled").count():
                break
            try:
                tab.click("#cancel-job", timeout=5_000)
                tab.wait_for_selector("#job-cancelled", timeout=10_000)
            except Exception:  # noqa: BLE001, S112 - the page reloaded under the click
                continue
        assert tab.inner_text("#job-state") == "cancelled" and _job(url, job_id)["state"] == "cancelled"


def test_docs_render_with_every_other_host_unreachable(server: str, offline: tuple[BrowserContext, list[str]]) -> None:
    context, tried = offline
    tab = context.new_page()
    tab.goto(server + "/docs")
    tab.wait_for_selector(".opblock-summary-path[data-path='/api/timeline']", timeout=30_000)
    paths = tab.locator(".opblock-summary-path").all_inner_texts()
    assert "/api/result" in "".join(paths) and "/api/objects" in "".join(paths)
    # POST: a what-if, an edit, a scheduler configuration, a job's cancel; DELETE: an object, a job
    assert tab.locator(".opblock-post").count() == 4 and tab.locator(".opblock-delete").count() == 2
    assert tried == []  # nothing was even asked of another host
