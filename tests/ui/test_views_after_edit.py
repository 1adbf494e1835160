"""The pods list, a pod's history and the timeline follow the edits: each is made with its run and
swapped in with it when an edit's job is done, so that after the edit every page is of the new run
(held against ``kubesched simulate`` of the scenario downloaded), while the job runs every page is of
the run before it (and answers at once), and a page never mixes two runs, even when an edit is
swapped in while the page is being made."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from kubesched.cli.main import cli  # noqa: E402
from kubesched.ui.state import Snapshot, UiState  # noqa: E402

from .conftest import BIG_NODE, followed, ui_client  # noqa: E402
from .test_jobs import CHURN, _running  # noqa: E402

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo.yaml")


def _every(client: TestClient, limit: int = 10) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    while True:
        page = client.get("/api/pods", params={"offset": len(rows), "limit": limit}).json()
        rows += page["pods"]
        if not page["pods"]:
            return rows


def _version(html: str) -> int:
    found = re.search(r'id="run-version"[^>]*>version (\d+)<', html)
    assert found is not None
    return int(found.group(1))


def _simulated(client: TestClient, tmp_path: Path) -> dict[str, Any]:
    """``kubesched simulate -o json`` of the scenario as the ui has it now (downloaded)."""
    path = tmp_path / "now.yaml"
    path.write_text(client.get("/api/scenario.yaml").text)
    out = CliRunner().invoke(cli, ["simulate", str(path), "-o", "json"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


def _victim(result: dict[str, Any]) -> str:
    return sorted(e["pod"] for e in result["events"] if e["reason"] == "Preempted")[0]


def test_after_an_edit_the_pods_list_history_and_timeline_are_the_new_runs(tmp_path: Path) -> None:
    client = ui_client(UiState.load(DEMO))
    before = _simulated(client, tmp_path)
    assert [p["pod"] for p in _every(client)] == sorted(before["pods"])
    victim = _victim(before)
    gone = unescape(client.get(f"/pods/{victim}").text)
    assert 'id="pod-gone"' in gone and _version(gone) == 1
    assert client.get("/api/timeline/events", params={"limit": 1}).json()["total"] == len(before["events"])

    job = followed(client, client.post("/api/objects", json={"yaml": BIG_NODE, "version": 1}))
    assert job["state"] == "done" and job["version"] == 2, job
    after = _simulated(client, tmp_path)
    assert after["pods"] != before["pods"]
    listed = _every(client)
    assert [p["pod"] for p in listed] == sorted(after["pods"])
    assert all(p["phase"] == after["pods"][p["pod"]]["phase"] for p in listed)
    victims = {e["pod"]: e["preemptor"] for e in after["events"] if e["reason"] == "Preempted"}
    assert {p["pod"]: p["preemptedBy"] for p in listed if p["preemptedBy"]} == victims
    events = client.get("/api/timeline/events", params={"limit": 2000}).json()
    assert [{k: v for k, v in e.items() if k != "index"} for e in events["events"]] == after["events"]
    timeline = unescape(client.get("/timeline").text)
    assert _version(timeline) == 2 and f"({len(victims)} preempted, marked)" in timeline
    pods = unescape(client.get("/pods").text)
    assert _version(pods) == 2 and f"of {len(after['pods'])}" in pods

    # the old victim's link: the same name (the run's generated names are the same where the pod
    # is the same), now a pod of the run that stands, diagnosed
    assert victim in after["pods"] and after["pods"][victim]["phase"] == "Running"
    page = unescape(client.get(f"/pods/{victim}").text)
    assert 'id="pod-gone"' not in page and _version(page) == 2
    assert f'<h1 id="pod-name">{victim}</h1>' in page and 'id="preempted-by"' not in page
    history = client.get(f"/api/pods/{victim}/history").json()
    assert history["preemptedBy"] is None and history["phase"] == "Running"
    # a pod only the first run had (a replacement its controller made for a preempted one) is gone
    # from every page: the CLI's words, 404
    only_before = sorted(set(before["pods"]) - set(after["pods"]))
    assert only_before
    missing = client.get(f"/pods/{only_before[0]}")
    assert missing.status_code == 404 and _version(missing.text) == 2
    assert client.get(f"/api/pods/{only_before[0]}/history").status_code == 404


def test_while_an_edit_runs_the_new_pages_answer_with_the_run_before_it(tmp_path: Path) -> None:
    quiet = tmp_path / "quiet.yaml"
    from .test_jobs import QUIET

    quiet.write_text(QUIET)
    client = ui_client(UiState.load(str(quiet)))
    answer = client.post("/api/objects", json={"yaml": CHURN, "version": 1})
    assert answer.status_code == 202
    _running(client, answer.json()["id"])  # a run of days: it cannot finish while we look
    for path in ("/pods", "/timeline", "/pods?q=churn", "/timeline?at=0"):
        page = client.get(path)
        assert page.status_code == 200 and _version(page.text) == 1, path
    assert client.get("/api/pods").json()["total"] == 0  # the run shown has no pods yet
    assert client.get("/api/timeline/events").json()["total"] == 0
    assert client.delete(f"/api/jobs/{answer.json()['id']}").status_code == 200
    assert followed(client, answer)["state"] == "cancelled"
    assert client.get("/api/pods").json()["total"] == 0


def test_a_page_made_while_an_edit_is_swapped_in_is_all_of_one_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit swapped in between two reads of one page: the page is still all of the run it began
    with (its header's version, its rows and its counts), and the next one all of the new run."""
    state = UiState.load(DEMO)
    client = ui_client(state)
    first = state.snapshot
    assert followed(client, client.post("/api/objects", json={"yaml": BIG_NODE}))["state"] == "done"
    second = state.snapshot
    assert second.version == 2 and len(second.pods.rows) != len(first.pods.rows)

    def swapping(snap: Snapshot, attribute: str, name: str) -> None:
        """``snap.attribute.name`` swaps ``second`` in before it answers, as an edit's job may."""
        original = getattr(getattr(snap, attribute), name)

        def answer(*args: Any, **kwargs: Any) -> Any:
            state.snapshot = second
            return original(*args, **kwargs)

        monkeypatch.setattr(getattr(snap, attribute), name, answer)

    state.snapshot = first
    swapping(first, "pods", "select")
    page = unescape(client.get("/pods").text)
    assert _version(page) == 1 and f"of {len(first.pods.rows)}" in page
    assert page.count('class="pod-row"') == len(first.pods.rows)
    assert _version(client.get("/pods").text) == 2  # the next page: the run swapped in

    state.snapshot = first
    swapping(first, "timeline", "page")
    page = unescape(client.get("/timeline").text)
    preempted = sum(e["reason"] == "Preempted" for e in first.result["events"])
    assert _version(page) == 1 and f"({preempted} preempted, marked)" in page
    assert f"of {len(first.result['events'])}" in page

    state.snapshot = first
    victim = _victim(first.result)
    swapping(first, "pods", "history")  # the gone pod's page: its history read after the swap
    page = unescape(client.get(f"/pods/{victim}").text)
    assert _version(page) == 1 and 'id="pod-gone"' in page and 'id="preempted-by"' in page
