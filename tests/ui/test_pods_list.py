"""The pods list, filtered, sorted and paged on the server, and a pod's preemptions linked both ways
(a gone victim's page too), held against the demo's run as ``kubesched simulate -o json`` writes it:
payments pods preempt batch pods, which are deleted."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from kubesched.cli.main import cli  # noqa: E402
from kubesched.ui.state import UiState  # noqa: E402

from .conftest import followed, pod_href, ui_client  # noqa: E402

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo.yaml")


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    out = CliRunner().invoke(cli, ["simulate", DEMO, "-o", "json"], catch_exceptions=False)
    return json.loads(out.output)


@pytest.fixture(scope="module")
def demo() -> TestClient:
    return ui_client(UiState.load(DEMO))


def _every(client: TestClient, limit: int = 7, **params: str) -> list[dict[str, Any]]:
    """Every pod ``/api/pods`` lists with ``params``, ``limit`` at a time, as the page's next links go."""
    rows: list[dict[str, Any]] = []
    while True:
        page = client.get("/api/pods", params={**params, "offset": len(rows), "limit": limit}).json()
        rows += page["pods"]
        if not page["pods"]:
            assert len(rows) == page["total"]
            return rows


def _cli(*args: str) -> dict[str, Any]:
    out = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


def _victims(result: dict[str, Any]) -> dict[str, str]:
    """victim -> preemptor, from the run's Preempted events."""
    return {e["pod"]: e["preemptor"] for e in result["events"] if e["reason"] == "Preempted"}


def test_every_pod_is_listed_once_page_by_page_and_filtered(demo: TestClient, result: dict[str, Any]) -> None:
    listed = _every(demo)
    assert [p["pod"] for p in listed] == sorted(result["pods"])  # by name, each once, gone ones too
    assert all(p["phase"] == result["pods"][p["pod"]]["phase"] and p["node"] == result["pods"][p["pod"]]["node"]
               for p in listed)
    deleted = [p["pod"] for p in _every(demo, phase="Deleted")]
    assert deleted == sorted(k for k, p in result["pods"].items() if p["phase"] == "Deleted") != []
    on_node = _every(demo, node="node-1")
    assert {p["pod"] for p in on_node} == {k for k, p in result["pods"].items() if p["node"] == "node-1"}
    batch = _every(demo, priorityClass="batch", namespace="default")
    assert {p["pod"] for p in batch} == {k for k, p in result["pods"].items() if p["priorityClassName"] == "batch"}
    # the owner is the controller, followed up: the payments ReplicaSet's pods are their Deployment's
    payments = _every(demo, owner="default/payments")
    assert {p["pod"] for p in payments} == {k for k in result["pods"] if k.startswith("default/payments-")}
    assert {(p["owner"]["kind"], p["owner"]["name"]) for p in payments} == {("Deployment", "default/payments")}
    assert [p["pod"] for p in _every(demo, q="CANARY")] == ["default/canary"]
    assert _every(demo, phase="Running", node="node-does-not-exist") == []


def test_sorted_by_priority_node_and_pending_time(demo: TestClient, result: dict[str, Any]) -> None:
    by_priority = _every(demo, sort="-priority")
    priorities = [p["priority"] for p in by_priority]
    assert priorities == sorted(priorities, reverse=True) and priorities[0] == 10000
    assert [p["priority"] for p in _every(demo, sort="priority")] == sorted(priorities)
    nodes = [p["node"] for p in _every(demo, sort="node")]
    placed = [n for n in nodes if n is not None]
    assert placed == sorted(placed) and nodes[len(placed):] == [None] * (len(nodes) - len(placed))
    # pending time: until scheduled, or to the end for a pod still pending (created by the run)
    waited = _every(demo, sort="-pending")
    assert [p["pendingSeconds"] for p in waited] == sorted((p["pendingSeconds"] for p in waited), reverse=True)
    created = {e["pod"]: e["time"] for e in result["events"] if e["reason"] == "Created"}
    first = waited[0]
    assert first["phase"] == "Pending" and first["pendingSeconds"] == result["endTime"] - created[first["pod"]]
    payments = next(p for p in waited if p["pod"].startswith("default/payments-") and p["scheduled"] is not None)
    assert payments["pendingSeconds"] == payments["scheduled"] - created[payments["pod"]] > 0
    assert demo.get("/api/pods", params={"sort": "age"}).status_code == 400


def test_the_html_list_pages_with_links_without_javascript(demo: TestClient, result: dict[str, Any]) -> None:
    first = unescape(demo.get("/pods", params={"limit": 10, "sort": "-priority"}).text)
    assert "pods 1–10 of 31" in first and 'id="prev-page"' not in first
    assert 'id="next-page" href="/pods?limit=10&sort=-priority&offset=10"' in first
    last = unescape(demo.get("/pods", params={"limit": 10, "sort": "-priority", "offset": 30}).text)
    assert "pods 31–31 of 31" in last and 'id="next-page"' not in last
    assert 'id="prev-page" href="/pods?limit=10&sort=-priority&offset=20"' in last
    top = sorted(result["pods"], key=lambda k: (-result["pods"][k]["priority"], k))[:10]
    assert [f'<a class="pod-link" href="{pod_href(result, key)}">{key}</a>' in first for key in top] == [True] * 10
    filtered = unescape(demo.get("/pods", params={"phase": "Deleted"}).text)
    assert "<option selected>Deleted</option>" in filtered  # the form keeps what was chosen
    victims = _victims(result)
    for victim, preemptor in victims.items():
        assert f'href="{pod_href(result, victim)}"' in filtered and f'href="{pod_href(result, preemptor)}"' in filtered


def test_a_preemptor_links_its_victims_and_each_victim_links_back(demo: TestClient, result: dict[str, Any]) -> None:
    victims = _victims(result)
    assert len(victims) == result["summary"]["victims"] == 7
    for preemptor in set(victims.values()):
        page = unescape(demo.get(f"/pods/{preemptor}").text)
        assert page.count('class="victim-link"') == sum(1 for p in victims.values() if p == preemptor)
        for victim in (v for v, p in victims.items() if p == preemptor):
            assert f'<a class="victim-link" href="{pod_href(result, victim)}">{victim}</a>' in page
    for victim, preemptor in victims.items():
        page = demo.get(f"/pods/{victim}")
        assert page.status_code == 200  # gone at the end, not a 404
        text = unescape(page.text)
        assert f'Preempted by <a class="preemptor-link" href="{pod_href(result, preemptor)}">{preemptor}</a>' in text
        history = demo.get(f"/api/pods/{victim}/history").json()
        assert history["preemptedBy"]["preemptor"] == preemptor
        assert [e["reason"] for e in history["events"]] == [e["reason"] for e in result["events"] if e["pod"] == victim]


def test_a_deleted_victims_page_says_when_it_came_where_it_ran_and_when_it_went(
        demo: TestClient, result: dict[str, Any]) -> None:
    victim = next(e for e in result["events"] if e["reason"] == "Preempted")
    key = victim["pod"]
    gone = next(e for e in result["events"] if e["pod"] == key and e["reason"] == "Deleted")
    page = unescape(demo.get(f"/pods/{key}").text)
    assert f"Gone at the end of the run: Deleted at t={gone['time']:g}s" in page
    assert f'<a class="node-link" href="/nodes/{victim["node"]}">{victim["node"]}</a>, scheduled at t=' in page
    assert 'id="pod-events"' in page and "Preempted by a pod on node" in page
    # a pod the run never had is still the CLI's 404, and its history too
    assert demo.get("/pods/default/nope").status_code == 404
    assert demo.get("/api/pods/default/nope/history").status_code == 404
    # its link to an earlier moment goes through the ?at job: 303 to the job's page, whose result is
    # the pod diagnosed then, as kubesched explain --at says it
    link = re.search(r'id="diagnose-earlier" href="([^"]+)"', page)
    assert link is not None
    started = demo.get(link.group(1), follow_redirects=False)
    assert started.status_code == 303 and started.headers["location"].startswith("/jobs/")
    job = followed(demo, started)
    assert job["state"] == "done" and job["result"] == link.group(1), job
    at = parse_qs(urlsplit(link.group(1)).query)["at"][0]
    assert parse_qs(urlsplit(link.group(1)).query)["id"] == [result["pods"][key]["identity"]]
    assert float(at) < gone["time"]
    moment = unescape(demo.get(job["result"]).text)
    assert f"at t={at}s:" in moment and f"--at {at}s -o json" in moment
    assert demo.get(job["apiResult"]).json() == _cli("explain", key, DEMO, "--at", f"{at}s", "-o", "json")
    # the form asks for a moment up to the one it went at; the server's bound is the run's end
    assert f'max="{gone["time"]:g}"' in page
    after = demo.get(f"/pods/{key}", params={"at": result["endTime"] + 1}, follow_redirects=False)
    assert after.status_code == 400 and "not a moment of the run" in after.text
