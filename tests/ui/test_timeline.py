"""The timeline rendered on the server: every event of a run, a page at a time (past the 500 the
old script showed), each pod and node a link; the counts at a moment; the chart (inline SVG,
preemptions marked), all without JavaScript."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")

from kubesched.cli.main import cli  # noqa: E402
from kubesched.ui.state import UiState  # noqa: E402

from .conftest import pod_href, ui_client  # noqa: E402

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo.yaml")
NODE = """\
apiVersion: v1
kind: Node
metadata: {{name: node-{i:02d}, labels: {{kubernetes.io/hostname: node-{i:02d}}}}}
status: {{allocatable: {{cpu: "16", memory: 64Gi, pods: "110"}}}}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  replicas: 260
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: c, image: x, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
"""


def _simulated(path: str) -> dict[str, Any]:
    return json.loads(CliRunner().invoke(cli, ["simulate", path, "-o", "json"], catch_exceptions=False).output)


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Ten nodes and 260 pods: some 780 events, more than one page and more than 500."""
    path = tmp_path_factory.mktemp("many") / "many.yaml"
    path.write_text("---\n".join([*(NODE.format(i=i) for i in range(10)), DEPLOYMENT]))
    return str(path)


def test_every_event_page_by_page_as_json_and_as_html(many: str) -> None:
    result = _simulated(many)
    assert len(result["events"]) > 700
    client = ui_client(UiState.load(many))
    seen: list[dict[str, Any]] = []
    while True:
        page = client.get("/api/timeline/events", params={"offset": len(seen), "limit": 300}).json()
        if not page["events"]:
            break
        seen += page["events"]
    assert [{k: v for k, v in e.items() if k != "index"} for e in seen] == result["events"]
    assert page["total"] == len(result["events"])
    # the HTML pages: 200 rows each, next until the last, and the last page reached by its link
    html = unescape(client.get("/timeline").text)
    assert f"events 1–200 of {len(result['events'])}" in html and html.count('class="event-row"') == 200
    last = re.search(r'id="last-page" href="([^"]+)"', html)
    assert last is not None
    tail = unescape(client.get(last.group(1)).text)
    assert f"of {len(result['events'])}" in tail and 'id="next-page"' not in tail
    final = result["events"][-1]
    assert f'<a class="pod-link" href="{pod_href(result, final["pod"])}">{final["pod"]}</a>' in tail
    # filtered by text: one pod's events only
    pod = result["events"][0]["pod"]
    mine = client.get("/api/timeline/events", params={"q": pod}).json()
    assert [e["reason"] for e in mine["events"]] == [e["reason"] for e in result["events"] if e["pod"] == pod]


def test_the_chart_marks_the_preemptions_and_the_counts_follow_the_moment() -> None:
    result = _simulated(DEMO)
    client = ui_client(UiState.load(DEMO))
    html = unescape(client.get("/timeline").text)
    chart = html[html.index('<figure id="chart"'):html.index("</figure>")]
    assert chart.count("<svg") == 1 and "<path" in chart
    preempted = {e["time"] for e in result["events"] if e["reason"] == "Preempted"}
    assert chart.count('<line class="mark"') == len(preempted) > 0
    for t in preempted:
        assert f'href="/timeline?reason=Preempted&at={t:g}"' in chart
    running_end = sum(1 for p in result["pods"].values() if p["phase"] == "Running")
    assert f'running <strong id="running-count">{running_end}</strong>' in html
    # at t=20 the payments pods arrive and preempt: the page starts at that moment's first event
    at = client.get("/timeline", params={"at": 20, "reason": "Preempted"}).text
    first = next(e for e in result["events"] if e["reason"] == "Preempted" and e["time"] >= 20)
    rows = re.findall(r'<tr class="event-row"><td>([^<]+)</td><td>([^<]+)</td>', at)
    assert rows[0] == (f"{first['time']:g}", "Preempted") and all(r[1] == "Preempted" for r in rows)
    assert f'by</span> <a class="preemptor-link" href="{pod_href(result, first["preemptor"])}">' in at
    assert client.get("/timeline", params={"at": result["endTime"] + 1}).status_code == 400


def test_the_timeline_needs_no_script() -> None:
    """The page has its events and counts in the HTML, and the script has no timeline code left."""
    client = ui_client(UiState.load(DEMO))
    html = client.get("/timeline").text
    assert 'class="event-row"' in html and 'id="pending-count">2<' in html
    assert "/api/timeline" not in client.get("/static/ui.js").text


@pytest.mark.parametrize(("t", "text"), [(0.0, "0"), (35.0, "35"), (0.25, "0.25"), (1234567.5, "1234567.5"),
                                         (1 / 3, "0.3333333333333333"), (1e16, "1e+16")])
def test_a_moment_in_a_link_is_exact(t: float, text: str) -> None:
    """The moments the pages link to (a preemption's mark, a gone pod's earlier moment, a ?at job's
    result) come back as the same float: six digits would make t=1234567.5 another moment."""
    from kubesched.ui.runtimeline import moment_text

    assert moment_text(t) == text and float(text) == t
