"""The ui in a real browser: Debian's headless Chromium driven by Playwright (no browser download),
against the real server (uvicorn) on a free port. A failing test leaves a screenshot in its tmp dir."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner

if not os.environ.get("KUBESCHED_REQUIRE_BROWSER"):  # CI sets it: there, a missing extra fails
    pytest.importorskip("fastapi")
    pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Page, sync_playwright  # noqa: E402

from kubesched.cli.main import cli  # noqa: E402
from kubesched.testkit.dumps.cluster import ClusterDump  # noqa: E402
from kubesched.ui.app import create_app  # noqa: E402
from kubesched.ui.state import UiState  # noqa: E402

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
if BROWSER is None and os.environ.get("KUBESCHED_REQUIRE_BROWSER"):
    raise RuntimeError("KUBESCHED_REQUIRE_BROWSER is set but no chromium is installed")
pytestmark = pytest.mark.skipif(BROWSER is None, reason="needs Debian's chromium (apt-get install chromium)")

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo.yaml")


@contextmanager
def _serving(path: str) -> Iterator[str]:
    """``kubesched ui PATH`` as it serves: the app on uvicorn, on a free port of the loopback."""
    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = create_app(UiState.load(path))
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with _serving(DEMO) as url:
        yield url


@pytest.fixture()
def page(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Page]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=BROWSER, args=["--no-sandbox"])
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        try:
            yield tab
        finally:
            report = getattr(request.node, "rep_call", None)
            if report is None or report.failed:
                tab.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            browser.close()


def _cli(*args: str) -> dict:
    return json.loads(CliRunner().invoke(cli, list(args), catch_exceptions=False).output)


def test_from_the_cluster_to_a_pending_pod_to_a_drain(server: str, page: Page) -> None:
    page.goto(server + "/")
    assert "scheduled 29, pending 2" in page.inner_text("#summary")
    page.fill("#node-search", "node-6")
    page.wait_for_selector("#search-results tr.node-row[data-name='node-6']")  # asked of the API
    assert page.locator("tr.node-row:visible").count() == 1
    page.click("text=default/batch-vcrnf")
    page.wait_for_url(re.compile(r"/pods/default/batch-vcrnf\?id="))
    explained = _cli("explain", "default/batch-vcrnf", DEMO, "-o", "json")
    assert page.inner_text("#upstream-message") == explained["upstreamMessage"]
    groups = page.inner_text("#node-groups")
    assert "NodeUnschedulable" in groups and "NodeResourcesFit" in groups and "5 nodes" in groups
    page.click("text=What if")
    page.select_option("#drain", "node-2")
    page.check("input[name=ignoreDaemonSets]")
    page.check("input[name=force]")
    page.click("#run-whatif")
    page.wait_for_selector("#whatif-result", state="visible", timeout=60_000)
    diff = _cli("whatif", DEMO, "--drain", "node-2", "--ignore-daemonsets", "--force", "-o", "json")
    rows = page.locator("#whatif-summary tbody tr").all_inner_texts()
    assert rows[0].split("\t") == ["scheduled", str(diff["summary"]["baseline"]["scheduled"]),
                                   str(diff["summary"]["changed"]["scheduled"])]
    assert page.locator("#whatif-preempted li").count() == len(diff["preempted"])


def test_a_bad_change_shows_the_clis_error_and_the_timeline_goes_to_a_moment(server: str, page: Page) -> None:
    page.goto(server + "/whatif")
    page.fill("#cordon", "node-9")
    page.click("#run-whatif")
    page.wait_for_selector("#whatif-error", state="visible")
    assert page.inner_text("#whatif-error").startswith("--cordon node-9: no Node of that name in the snapshot")
    assert page.is_hidden("#whatif-result")
    page.goto(server + "/timeline")
    assert page.inner_text("#pending-count") == "2"  # at the end of the run
    assert page.locator("#chart svg line.mark").count() > 0  # the preemptions, marked
    page.fill("input[name=at]", "0")
    page.select_option("select[name=reason]", "FailedScheduling")
    page.click("#timeline-form button")
    page.wait_for_url("**/timeline?at=0*")
    assert "at t=0s" in page.inner_text("#counts")
    rows = page.locator("#events tbody tr").all_inner_texts()
    assert rows and all("FailedScheduling" in row for row in rows)


def test_from_the_pods_list_to_a_preempted_pod_to_its_preemptor(server: str, page: Page) -> None:
    simulated = _cli("simulate", DEMO, "-o", "json")
    preempted = {e["pod"]: e["preemptor"] for e in simulated["events"] if e["reason"] == "Preempted"}
    page.goto(server + "/")
    page.click("nav >> text=Pods")
    page.select_option("select[name=phase]", "Deleted")
    page.click("#pod-filters button")
    page.wait_for_url("**/pods?*phase=Deleted*")
    victim = sorted(preempted)[0]
    page.click(f"#pods a.pod-link >> text={victim}")
    page.wait_for_url(re.compile(rf"/pods/{re.escape(victim)}\?id="))  # its link carries its identity
    assert page.inner_text("#pod-gone").startswith("Gone at the end of the run: Deleted at t=")
    page.click("#preempted-by a.preemptor-link")
    page.wait_for_url(re.compile(rf"/pods/{re.escape(preempted[victim])}\?id="))
    assert page.inner_text("#pod-name") == preempted[victim]
    assert victim in page.locator("#victims a.victim-link").all_inner_texts()
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(server + "/pods")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1440  # no sideways scrolling


def test_a_pods_attempts_and_scores_and_a_whatifs_downloads(server: str, page: Page, tmp_path: Path) -> None:
    simulated = _cli("simulate", DEMO, "-o", "json", "--decisions")
    canary = [a for a in simulated["attempts"] if a["pod"] == "default/canary"]
    page.goto(server + "/pods/default/canary")
    assert page.locator("#attempts tr").count() == len(canary) + 1
    page.click("a.attempt-link >> nth=0")
    page.wait_for_selector("#attempt-scores")
    assert page.inner_text("#attempt-title").startswith(f"Attempt 1 at t={canary[0]['time']:g}s: scheduled on ")
    first = page.locator("#attempt-scores tr.score-row").first
    best = canary[0]["scores"][0]
    assert first.get_attribute("data-name") == best["node"]
    assert first.locator("td").last.inner_text() == str(best["total"])
    now = page.locator("#scores-now tr.score-row").first.locator("td").all_inner_texts()
    assert "→" in now[1] and "×" in now[1]  # raw → normalised × weight = weighted

    page.goto(server + "/whatif")
    page.select_option("#drain", "node-2")
    page.check("input[name=ignoreDaemonSets]")
    page.check("input[name=force]")
    page.click("#run-whatif")
    page.wait_for_selector("#whatif-result", timeout=60_000)
    with page.expect_download() as download:
        page.click("#whatif-scenario")
    saved = tmp_path / "changed.yaml"
    download.value.save_as(saved)
    assert _cli("simulate", str(saved), "-o", "json")["summary"]["pending"] == \
        _cli("whatif", DEMO, "--drain", "node-2", "--ignore-daemonsets", "--force", "-o", "json")["summary"]["changed"]["pending"]


def test_editing_adds_a_node_and_refuses_broken_yaml(page: Page) -> None:
    with _serving(DEMO) as url:  # a server of its own: the edit changes its scenario
        page.goto(url + "/edit")
        page.fill("#edit-yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: node-7\n")
        page.click("#apply-edit")
        page.wait_for_selector("#edit-error")
        assert page.inner_text("#edit-error").startswith("edit.yaml: document 1: line")
        assert "metadata: {name: node-7" in page.input_value("#edit-yaml")  # the text as it was sent
        page.fill("#edit-yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: node-7}\n"
                                "status: {allocatable: {cpu: '32', memory: 128Gi, pods: '110'}}\n")
        page.click("#apply-edit")
        page.wait_for_selector("#edit-done")
        assert "applied Node node-7" in page.inner_text("#edit-done") and "pending 0" in page.inner_text("#edit-done")
        page.click("text=Cluster")
        page.fill("#node-search", "node-7")
        page.wait_for_selector("#search-results tr.node-row[data-name='node-7']")  # asked of the API
        assert page.locator("tr.node-row:visible").count() == 1
        assert "pending 0" in page.inner_text("#summary")


def test_a_whatif_applies_objects_from_a_file_after_refusing_broken_yaml(server: str, page: Page, tmp_path: Path) -> None:
    broken = "apiVersion: v1\nkind: Node\nmetadata: {name: node-7\n"
    (tmp_path / "apply.yaml").write_text(broken)
    said = CliRunner().invoke(cli, ["whatif", DEMO, "--apply", str(tmp_path / "apply.yaml")])
    assert said.exit_code == 2
    page.goto(server + "/whatif")
    page.fill("#apply", broken)
    page.click("#run-whatif")
    page.wait_for_selector("#whatif-error")
    error = said.output.strip().removeprefix("error: ").replace(str(tmp_path / "apply.yaml"), "apply.yaml")
    assert page.inner_text("#whatif-error") == error and error.startswith("apply.yaml: document 1: line")
    assert page.is_hidden("#whatif-result") and page.input_value("#apply") == broken  # the text as it was sent
    good = tmp_path / "node.yaml"
    good.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: node-7}\n"
                    "status: {allocatable: {cpu: '32', memory: 128Gi, pods: '110'}}\n")
    page.set_input_files("#apply-file", str(good))  # read into the text area, in place of the broken text
    page.wait_for_function("document.getElementById('apply').value.includes('name: node-7}')")
    page.click("#run-whatif")
    page.wait_for_selector("#whatif-result", timeout=60_000)
    assert page.is_hidden("#whatif-error")
    diff = _cli("whatif", DEMO, "--apply", str(good), "-o", "json")
    rows = page.locator("#whatif-summary tbody tr").all_inner_texts()
    assert rows[1].split("\t") == ["pending", str(diff["summary"]["baseline"]["pending"]),
                                   str(diff["summary"]["changed"]["pending"])]
    assert diff["summary"]["changed"]["pending"] == 0 < diff["summary"]["baseline"]["pending"]


def test_a_300_node_cluster_by_pool_a_page_of_nodes_at_a_time_and_a_node_found_by_name(
        page: Page, tmp_path: Path) -> None:
    dump = ClusterDump()
    general = [n["metadata"]["name"] for n in dump.eks_nodegroup("general", 240)]
    dump.eks_nodegroup("gpu", 30, instance_type="g5.2xlarge", extended={"nvidia.com/gpu": "4"},
                       taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])
    dump.eks_nodegroup("spare", 30, unschedulable=True)
    dump.deployment("api", 300, [general[i % 240] for i in range(300)], namespace="shop", cpu="500m")
    path = dump.write(tmp_path / "cluster.json")
    listed = _cli("simulate", str(path), "-o", "json")["nodes"]
    with _serving(str(path)) as url:
        page.goto(url + "/")
        assert page.inner_text("#node-totals").startswith("300 nodes in 3 pools")
        pool = page.locator("details.pool[data-pool=general]")
        page.wait_for_function("!document.querySelector('[aria-busy=true]')")
        # the small pools open with their nodes; the large one is its sums until it is opened
        assert page.locator("details.pool[open] tr.node-row").count() == 60
        assert pool.locator("tr.node-row").count() == 0
        assert "240 nodes" in pool.locator("summary").inner_text()
        pool.locator("summary").click()
        pool.locator("tr.node-row").first.wait_for()
        mine = sorted(n["node"] for n in listed if n["node"] in set(general))
        assert [r.get_attribute("data-name") for r in pool.locator("tr.node-row").all()] == mine[:50]
        assert pool.locator(".range").inner_text() == "nodes 1–50 of 240"
        pool.locator("button.next").click()
        page.wait_for_function("document.querySelector('details.pool[data-pool=general] .range').textContent"
                               ".startsWith('nodes 51–100')")
        assert pool.locator("tr.node-row").first.get_attribute("data-name") == mine[50]
        pool.locator("a.zone-link[data-zone=us-west-2b]").click()
        page.wait_for_function("document.querySelector('details.pool[data-pool=general] .range').textContent"
                               " === 'nodes 1–50 of 80'")

        wanted = mine[77]
        page.fill("#node-search", wanted)
        found = page.locator(f"#search-results tr.node-row[data-name='{wanted}']")
        found.wait_for()
        assert page.locator("tr.node-row:visible").count() == 1 and page.inner_text("#node-count") == "1 node"
        found.locator("a.node-link").click()
        page.wait_for_url(f"**/nodes/{wanted}")
        assert page.inner_text("#node-name") == wanted
        pods = page.locator("#node-pods a.pod-link").all_inner_texts()
        simulated = _cli("simulate", str(path), "-o", "json")["pods"]
        assert pods == sorted(k for k, p in simulated.items() if p["node"] == wanted and p["phase"] != "Deleted")
        assert pods  # api pods run there


def test_a_whatif_runs_as_a_job_with_its_phases_listed_in_the_jobs_and_is_cancelled(page: Page, tmp_path: Path) -> None:
    from .test_jobs import CHURN, QUIET  # a cluster quiet until t=1e6, and pods that churn for days

    (tmp_path / "quiet.yaml").write_text(QUIET)
    with _serving(str(tmp_path / "quiet.yaml")) as url:
        page.goto(url + "/whatif")
        page.fill("#apply", CHURN)
        page.click("#run-whatif")
        page.wait_for_url("**/jobs/*")  # answered at once: the job's page
        assert page.inner_text("#job-title").endswith("what-if: apply 1 object")
        # the page reloads itself until the progress shows simulated time (no script needed)
        page.wait_for_selector("#job-bar", timeout=60_000)
        page.wait_for_function("(document.getElementById('job-progress') || {textContent: ''})"
                               ".textContent.includes('scheduling cycles')", timeout=60_000)
        assert page.get_attribute("#job-state", "data-state") == "running"
        assert "of 1e+06s" in page.inner_text("#job-progress")
        # its phases: those before the run (the scenario prepared, read, the simulation set up), and now the run
        # (the page as the server sends it: read from the live tab, a reload may come between two reads)
        job_url = page.url
        html = page.request.get(job_url).text()
        assert re.search(r'<span id="job-phase" data-phase="running">running \d+%</span>', html), html
        assert re.findall(r"<li(?: class=\"now\")?>([^<]+)</li>", html.split('id="job-phases"')[1].split("</ol>")[0]) == [
            "preparing", "reading", "setting up", "running"]
        # the header's Jobs link: the list, this job running (counted in the header), its link back to it
        page.click("#nav-jobs")
        page.wait_for_url("**/jobs")
        assert page.inner_text("#jobs-active") == "1"
        job_id = job_url.rsplit("/", 1)[1]
        row = page.locator(f'#jobs-table tr[data-job="{job_id}"]')
        assert row.get_attribute("data-state") == "running" and "apply 1 object" in row.inner_text()
        row.locator(f'a[href="/jobs/{job_id}"]').click()
        page.wait_for_url(job_url)
        for _ in range(20):  # a reload may come between finding the button and the click: click again
            if page.locator("#job-cancelled").count():
                break
            try:
                page.click("#cancel-job", timeout=5_000)
                page.wait_for_selector("#job-cancelled", timeout=10_000)
            except Exception:  # noqa: BLE001, S112 - the page reloaded under the click
                continue
        assert page.inner_text("#job-state") == "cancelled"
        assert page.inner_text("#job-cancelled") == "Cancelled: nothing was changed."
        page.goto(url + "/")
        assert "pending 0" in page.inner_text("#summary")
        assert page.locator("#jobs-active").count() == 0  # nothing runs now
        page.click("#nav-jobs")
        page.click("#jobs-cancelled")  # the list of the cancelled ones
        assert page.locator("#jobs-table tr[data-job]").evaluate_all("rows => rows.map(r => r.dataset.state)") == [
            "cancelled"]


def test_an_old_pod_link_works_after_an_edits_job(page: Page, tmp_path: Path) -> None:
    """Links kept from before an edit lead, once its job is done, to the same pods of the new run:
    the run's generated pod names are the same where the pod is (a ReplicaSet's pods are named as
    before), so a victim of the first run now running has its pod page, and a pod running in the
    first run but preempted in the new one its gone page, whose earlier moment goes through a job."""
    from .conftest import BIG_NODE, pod_href

    first = _cli("simulate", DEMO, "-o", "json")
    with _serving(DEMO) as url:
        page.goto(url + "/pods?phase=Deleted")
        links = page.locator("#pods a.pod-link").evaluate_all("links => links.map(a => a.getAttribute('href'))")
        assert links and page.inner_text("#run-version") == "version 1"
        page.goto(url + "/edit")
        page.fill("#edit-yaml", BIG_NODE)
        page.click("#apply-edit")  # its job's page, then (done) the edit page again
        page.wait_for_selector("#edit-done", timeout=120_000)
        assert page.inner_text("#run-version") == "version 2"
        (tmp_path / "now.yaml").write_text(page.request.get(url + "/api/scenario.yaml").text())
        second = _cli("simulate", str(tmp_path / "now.yaml"), "-o", "json")

        # a victim of the first run that runs in the new one: its old link is its pod page now
        back = next(k for k in sorted(first["pods"]) if first["pods"][k]["phase"] == "Deleted"
                    and second["pods"].get(k, {}).get("phase") == "Running")
        old_link = pod_href(first, back)  # the link as version 1 rendered it, with the pod's identity
        assert old_link in links
        page.goto(url + old_link)
        assert page.inner_text("#pod-name") == back and page.locator("#pod-gone").count() == 0
        assert page.inner_text("#run-version") == "version 2"
        assert "(the end of the run)" in page.inner_text("#pod-state")
        assert page.locator("#preempted-by").count() == 0

        # a pod running in the first run and preempted in the new one: its gone page, whose link
        # to an earlier moment is a job (its page, then the pod diagnosed then)
        went = next(k for k in sorted(first["pods"]) if first["pods"][k]["phase"] == "Running"
                    and second["pods"].get(k, {}).get("phase") == "Deleted")
        page.goto(url + f"/pods/{went}")
        assert page.inner_text("#pod-gone").startswith("Gone at the end of the run: Deleted at t=")
        assert page.inner_text("#run-version") == "version 2"
        preemptor = next(e["preemptor"] for e in second["events"] if e["pod"] == went and e["reason"] == "Preempted")
        assert page.inner_text("#preempted-by a.preemptor-link") == preemptor
        earlier = page.get_attribute("#diagnose-earlier", "href")
        assert earlier is not None and earlier.startswith(f"{pod_href(second, went)}&at=")
        page.click("#diagnose-earlier")
        page.wait_for_url("**/jobs/*")
        page.wait_for_url(re.compile(re.escape(earlier) + "$"), timeout=120_000)  # the job's page goes to its result
        assert page.inner_text("#pod-name") == went
        assert f"at t={parse_qs(urlsplit(earlier).query)['at'][0]}s" in page.inner_text("#pod-state")
