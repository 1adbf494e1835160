"""The ui's JSON API gives the documents the CLI prints with -o json, and refuses bad input with the
CLI's words, changing nothing."""

from __future__ import annotations

import json
from html import unescape
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from kubesched.cli.main import cli  # noqa: E402
from kubesched.ui.state import UiState  # noqa: E402

from .conftest import every_node, followed, form_fields, job_result, pod_href, ui_client  # noqa: E402

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo.yaml")


@pytest.fixture(scope="module")
def client() -> TestClient:
    return ui_client(UiState.load(DEMO))


def _cli(*args: str) -> dict:
    out = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


def test_the_cluster_and_the_pods_are_the_clis(client: TestClient) -> None:
    simulated = _cli("simulate", DEMO, "-o", "json")
    cluster = client.get("/api/cluster").json()
    assert cluster["summary"] == simulated["summary"]
    by_node = {n["node"]: n for n in every_node(client)}
    for node in simulated["nodes"]:
        assert {k: by_node[node["node"]][k] for k in node} == node
    assert cluster["pending"] == sorted(k for k, p in simulated["pods"].items() if p["phase"] == "Pending" and not p["node"])
    for pod in cluster["pending"]:
        assert client.get(f"/api/pods/{pod}").json() == _cli("explain", pod, DEMO, "-o", "json")


def test_a_whatif_is_the_clis_and_bad_changes_get_its_message(client: TestClient) -> None:
    answer = client.post("/api/whatif", json={"drain": ["node-2"], "ignoreDaemonSets": True, "force": True})
    assert answer.status_code == 202  # a job: followed to its end, its result is the diff
    assert job_result(client, answer) == _cli("whatif", DEMO, "--drain", "node-2", "--ignore-daemonsets", "--force", "-o", "json")
    before = client.get("/api/cluster").json()
    bad = client.post("/api/whatif", json={"drain": ["node-9"]})
    assert bad.status_code == 400
    assert bad.json()["detail"].startswith("--drain node-9: no Node of that name in the snapshot (nodes: node-1")
    flags = client.post("/api/whatif", json={"force": True})
    assert flags.status_code == 400 and "go with drain" in flags.json()["detail"]
    huge = client.post("/api/whatif", json={"cordon": ["x" * 10_000_000]})  # a 10 MB paste
    assert huge.status_code == 400 and len(huge.content) < 1000
    assert huge.json()["detail"] == ("--cordon " + "x" * 40 + "…: not a node name (10,000,000 characters; "
                                     "a Kubernetes object's name has at most 253)")
    page = client.post("/whatif", data={**form_fields(client, "/whatif"), "cordon": "x" * 10_000_000})
    assert page.status_code == 400 and "not a node name" in page.text and len(page.content) < 100_000
    assert client.get("/api/cluster").json() == before  # nothing changed


def test_pages_and_the_documented_api(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert f'href="{pod_href(client.get("/api/result").json(), "default/quarterly-report")}"' in page.text
    assert "quarterly-report" in client.get("/pods/default/quarterly-report").text
    missing = client.get("/pods/default/nope")
    assert missing.status_code == 404 and 'pods "nope" not found in namespace "default"' in unescape(missing.text)
    assert "Traceback" not in missing.text
    schema = client.get("/openapi.json").json()
    assert {"/api/cluster", "/api/pods/{namespace}/{name}", "/api/timeline", "/api/whatif"} <= set(schema["paths"])
    assert client.get("/static/ui.js").status_code == 200


@pytest.mark.parametrize("pod", ["default/nope", "kube-system/quarterly-report"])
def test_a_pod_not_there_gets_the_clis_words(client: TestClient, pod: str) -> None:
    said = CliRunner().invoke(cli, ["explain", pod, DEMO, "-o", "json"])
    assert said.exit_code == 2
    answer = client.get(f"/api/pods/{pod}")
    assert answer.status_code == 404
    assert said.output.strip() == "error: " + answer.json()["detail"]  # e.g. "there is default/quarterly-report (-n default)"


def test_the_whatif_page_posts_the_form_and_shows_the_diff_or_the_clis_error(client: TestClient) -> None:
    started = client.post("/whatif", data={**form_fields(client, "/whatif"), "drain": "node-2", "ignoreDaemonSets": "on", "force": "on", "preemption": ""},
                          follow_redirects=False)
    assert started.status_code == 303 and started.headers["location"].startswith("/jobs/")
    job = followed(client, started)
    answer = client.get(job["result"])  # the job page leads there once it is done
    assert answer.status_code == 200
    diff = _cli("whatif", DEMO, "--drain", "node-2", "--ignore-daemonsets", "--force", "-o", "json")
    page = unescape(answer.text)
    baseline, changed = diff["summary"]["baseline"], diff["summary"]["changed"]
    assert f"<td>pending</td><td>{baseline['pending']}</td><td>{changed['pending']}</td>" in page
    assert f"Preempted ({len(diff['preempted'])})" in page and diff["preempted"][0]["victim"] in page
    assert "<option selected>node-2</option>" in page and 'name="force" checked' in page  # the form as it was sent

    said = CliRunner().invoke(cli, ["whatif", DEMO, "--drain", "node-9"])
    assert said.exit_code != 0 and said.output.startswith("error: --drain node-9: no Node of that name")
    refused = client.post("/whatif", data={**form_fields(client, "/whatif"), "drain": "node-9", "cordon": "node-1, node-3"})
    assert refused.status_code == 400
    page = unescape(refused.text)
    assert f'<p id="whatif-error" class="error">{said.output.strip().removeprefix("error: ")}</p>' in page
    assert 'value="node-1, node-3"' in page and "whatif-result" not in page and "Traceback" not in page
