"""Editing the scenario in the ui: an object pasted as YAML is read as ``whatif --apply`` reads a
file (the same errors, naming the document and the field), the run is simulated again, and the
scenario downloaded is one the CLI simulates to the same result. Bad input changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from kubesched.cli.main import cli  # noqa: E402
from kubesched.ui.state import UiState  # noqa: E402

from .conftest import BIG_NODE, followed, form_fields, ui_client  # noqa: E402

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo.yaml")

def _invoke(*args: str) -> tuple[int, str]:
    out = CliRunner().invoke(cli, list(args))
    return out.exit_code, out.output


def _simulated(path: Path) -> dict:
    code, output = _invoke("simulate", str(path), "--decisions", "-o", "json")
    assert code == 0, output
    return json.loads(output)


@pytest.fixture()
def client() -> TestClient:
    return ui_client(UiState.load(DEMO))


def test_an_added_node_runs_again_as_the_cli_runs_the_scenario_downloaded(client: TestClient, tmp_path: Path) -> None:
    before = client.get("/api/result").json()
    assert before["summary"]["pending"] == 2
    answer = client.post("/api/objects", json={"yaml": BIG_NODE})
    assert answer.status_code == 202, answer.text  # a job simulates again; the new run is swapped in when done
    job = followed(client, answer)
    assert job["state"] == "done" and job["notes"] == ["applied Node node-7"]
    after = client.get(job["apiResult"]).json()
    assert after["summary"]["pending"] == 0
    # the same change through the CLI: whatif --apply FILE --save-changed, then simulate that
    (tmp_path / "node.yaml").write_text(BIG_NODE)
    code, output = _invoke("whatif", DEMO, "--apply", str(tmp_path / "node.yaml"),
                           "--save-changed", str(tmp_path / "changed.yaml"), "-o", "json")
    assert code == 0, output
    downloaded = client.get("/api/scenario.yaml")
    assert downloaded.text == (tmp_path / "changed.yaml").read_text()
    (tmp_path / "downloaded.yaml").write_text(downloaded.text)
    assert _simulated(tmp_path / "downloaded.yaml") == after
    # every page and answer reads the new run: the cluster's sums, its nodes, the node's page
    assert "7 nodes in 1 pool" in client.get("/").text and client.get("/api/cluster").json()["nodes"] == 7
    assert [n["node"] for n in client.get("/api/cluster/nodes", params={"q": "node-7"}).json()["nodes"]] == ["node-7"]
    assert client.get("/nodes/node-7").status_code == 200

    deleted = followed(client, client.delete("/api/objects/Node/node-7"))
    assert deleted["state"] == "done" and deleted["notes"] == ["deleted Node node-7"]
    assert client.get("/api/result").json() == before
    assert client.get("/api/cluster/nodes/node-7").status_code == 404


@pytest.mark.parametrize("text", [
    "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: [{name: a, image: i, resources: {requests: {cpu: lots}}}]\n",
    "apiVersion: v1\nkind: Pod\nmetadata: {name: x\nspec: {}\n",  # broken YAML
    "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {}\n",  # no containers
])
def test_bad_yaml_gets_the_clis_error_and_changes_nothing(client: TestClient, tmp_path: Path, text: str) -> None:
    before = client.get("/api/result").json()
    answer = client.post("/api/objects", json={"yaml": text})
    assert answer.status_code == 400
    path = tmp_path / "edit.yaml"
    path.write_text(text)
    code, output = _invoke("whatif", DEMO, "--apply", str(path))
    assert code == 2
    assert output.strip() == "error: " + answer.json()["detail"].replace("edit.yaml", str(path))
    assert answer.json()["detail"].startswith("edit.yaml: document 1")
    page = client.post("/edit", data={**form_fields(client), "action": "apply", "yaml": text})
    assert page.status_code == 400 and "Traceback" not in page.text
    assert 'id="edit-error"' in page.text and "edit.yaml: document 1" in page.text
    assert client.get("/api/result").json() == before


def test_a_huge_paste_and_an_unknown_object_are_refused(client: TestClient) -> None:
    before = client.get("/api/result").json()
    huge = client.post("/api/objects", json={"yaml": "# padding\n" * 1_000_000 + BIG_NODE})
    assert huge.status_code == 400 and "text pasted in the page takes at most 2 MiB" in huge.json()["detail"]
    page = client.post("/edit", data={**form_fields(client), "action": "apply", "yaml": "x" * 10_000_000})
    assert page.status_code == 400 and "at most 2 MiB" in page.text and len(page.text) < 100_000
    gone = client.delete("/api/objects/Node/node-9")
    assert gone.status_code == 400
    assert gone.json()["detail"].startswith("no Node node-9 in the scenario (Node objects: node-1, node-2")
    assert client.get("/api/objects/Pod/nope", params={"namespace": "default"}).status_code == 404
    assert client.get("/api/result").json() == before


def test_the_edit_page_lists_loads_and_deletes_objects(client: TestClient) -> None:
    page = client.get("/edit", params={"find": "node-"})
    assert page.text.count('class="object-row"') == 6
    node = client.get("/edit", params={"kind": "Node", "name": "node-6"}).text
    assert "name: node-6" in node
    job = followed(client, client.post("/edit", data={**form_fields(client), "action": "delete", "kind": "Node", "namespace": "", "name": "node-6"},
                                       follow_redirects=False))
    done = client.get(job["result"])  # where the job's page leads once it is done
    assert done.status_code == 200 and "deleted Node node-6" in done.text
    assert [o["name"] for o in client.get("/api/objects").json() if o["kind"] == "Node"] == [f"node-{i}" for i in range(1, 6)]
