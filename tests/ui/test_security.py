"""The ui safe by default on the loopback: only requests naming this server are answered (DNS
rebinding), writes sent by other sites' pages are refused and change nothing (CSRF), the forms carry
this process's token, an edit made on an earlier version of the scenario is refused (409) rather than
applied over another's, /docs needs no network, and large answers are gzip-compressed."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from kubesched.ui.security import VERSION_HEADER, Safety  # noqa: E402
from kubesched.ui.state import UiState  # noqa: E402

from .conftest import BASE_URL, BIG_NODE, followed, form_fields, ui_client  # noqa: E402

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo.yaml")
EVIL = "http://evil.example"


@pytest.fixture(scope="module")
def demo_state() -> UiState:
    return UiState.load(DEMO)


@pytest.fixture()
def client() -> TestClient:
    return ui_client(UiState.load(DEMO))


def _nodes(client: TestClient) -> list[str]:
    return [o["name"] for o in client.get("/api/objects").json() if o["kind"] == "Node"]


def _done(client: TestClient, answer: httpx.Response) -> dict:
    """The job ``answer`` started (a 202's, or a form's 303 to its page), followed to its end: done."""
    job = followed(client, answer)
    assert job["state"] == "done", job
    return job


@pytest.mark.parametrize("host", ["127.0.0.1:8750", "localhost:8750", "[::1]:8750", "LOCALHOST", "127.0.0.1:9000"])
def test_the_loopback_names_are_answered(demo_state: UiState, host: str) -> None:
    client = ui_client(demo_state)
    answer = client.get("/api/cluster", headers={"Host": host})
    assert answer.status_code == 200 and answer.json()["nodes"] == 6


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8750", "127.0.0.1.evil.example", "localhost.evil"])
def test_another_host_is_refused_with_a_clear_message(demo_state: UiState, host: str) -> None:
    client = ui_client(demo_state)
    for path in ("/", "/api/result", "/api/scenario.yaml", "/docs", "/openapi.json"):
        answer = client.get(path, headers={"Host": host})
        assert answer.status_code == 400, path
        assert f"Host {host!r} is not a name this server answers to" in answer.text
        assert "--allow-host" in answer.text and "scenario" not in answer.text.lower()


def test_allow_host_and_the_bound_address_add_names(demo_state: UiState) -> None:
    safety = Safety.serving("10.1.2.3", ["kubesched.internal", "fd00::5"])
    assert safety.hosts == {"localhost", "127.0.0.1", "[::1]", "10.1.2.3", "kubesched.internal", "[fd00::5]"}
    client = ui_client(demo_state, safety)
    for host in ("kubesched.internal:8750", "10.1.2.3:8750", "[fd00::5]:8750", "localhost:8750"):
        assert client.get("/api/cluster", headers={"Host": host}).status_code == 200, host
    assert client.get("/api/cluster", headers={"Host": "evil.example"}).status_code == 400
    # listening on every interface names no host: only the loopback and --allow-host
    assert Safety.serving("0.0.0.0").hosts == {"localhost", "127.0.0.1", "[::1]"}
    for bad in ("http://kubesched.internal", "kubesched.internal:8750", "a/b", ""):
        with pytest.raises(ValueError, match="without a scheme, port or path"):
            Safety.serving("127.0.0.1", [bad])


def test_a_cross_origin_form_post_deletes_nothing(client: TestClient) -> None:
    fields = form_fields(client)  # even with the page's token (which another site cannot read)
    before = client.get("/api/scenario.yaml").text
    for headers in ({"Origin": EVIL}, {"Origin": "null"}, {"Referer": EVIL + "/page"},
                    {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:3000"},
                    {"Origin": "http://localhost:8750"}):  # another origin, though the same machine
        answer = client.post("/edit", data={**fields, "action": "delete", "kind": "Node", "name": "node-1"},
                             headers=headers)
        assert answer.status_code == 403, headers
        assert answer.text.startswith("refused: this change was sent by ")
        assert f"not by a page of this server ({BASE_URL})" in answer.text and "nothing was changed" in answer.text
    assert client.get("/api/scenario.yaml").text == before and "node-1" in _nodes(client)
    assert client.get("/api/jobs").json() == []  # refused before any job started


def test_the_json_api_refuses_other_sites_and_takes_curl(client: TestClient) -> None:
    for method, path, body in (("POST", "/api/objects", {"yaml": BIG_NODE}),
                               ("DELETE", "/api/objects/Node/node-1", None),
                               ("POST", "/api/whatif", {"drain": ["node-2"], "ignoreDaemonSets": True, "force": True})):
        answer = client.request(method, path, json=body, headers={"Origin": EVIL})
        assert answer.status_code == 403 and answer.json()["detail"].startswith(f"refused: this change was sent by {EVIL}")
    assert "node-7" not in _nodes(client) and "node-1" in _nodes(client)
    assert client.get("/api/jobs").json() == []  # refused before any job started
    # the same requests from this server's own page, or from a client that sends no Origin (curl)
    _done(client, client.post("/api/objects", json={"yaml": BIG_NODE}, headers={"Origin": BASE_URL}))
    assert "node-7" in _nodes(client)
    _done(client, client.delete("/api/objects/Node/node-7"))
    assert "node-7" not in _nodes(client)
    _done(client, client.post("/api/whatif", json={"cordon": ["node-1"]},
                              headers={"Origin": BASE_URL, "Sec-Fetch-Site": "same-origin"}))


def test_a_form_needs_this_processs_token(demo_state: UiState) -> None:
    client = ui_client(demo_state)
    fields = form_fields(client)
    assert set(fields) == {"csrf_token", "version"} and len(fields["csrf_token"]) >= 32
    assert form_fields(client, "/whatif").keys() == {"csrf_token"}
    before = client.get("/api/scenario.yaml").text
    other = form_fields(ui_client(demo_state))["csrf_token"]  # another server process's (a restart)
    assert other != fields["csrf_token"]
    for token, said in (("", "the form has no token"), (other, "the token of another kubesched ui process")):
        for path, data in (("/edit", {"action": "delete", "kind": "Node", "name": "node-1"}),
                           ("/whatif", {"cordon": "node-1"})):
            answer = client.post(path, data={**fields, **data, "csrf_token": token}, headers={"Origin": BASE_URL})
            assert answer.status_code == 403 and said in answer.text and "Reload the page" in answer.text
    assert client.get("/api/scenario.yaml").text == before and client.get("/api/jobs").json() == []


def test_an_edit_from_a_stale_version_is_refused_naming_both(client: TestClient) -> None:
    first = client.get("/api/result")
    assert first.headers[VERSION_HEADER] == "1"
    tab_a, tab_b = form_fields(client), form_fields(client)  # two tabs, both on version 1
    assert tab_a == tab_b and tab_a["version"] == "1"
    started = client.post("/edit", data={**tab_a, "action": "apply", "yaml": BIG_NODE}, follow_redirects=False)
    assert started.status_code == 303 and started.headers[VERSION_HEADER] == "1"  # the job runs: still version 1
    job = _done(client, started)
    assert job["basedOn"] == 1 and job["version"] == 2
    applied = client.get(job["result"])  # where the job's page leads once it is done
    assert applied.status_code == 200 and "applied Node node-7" in applied.text
    assert applied.headers[VERSION_HEADER] == "2" and 'id="scenario-version">version 2<' in applied.text
    after_a, jobs = client.get("/api/scenario.yaml").text, client.get("/api/jobs").json()
    stale = client.post("/edit", data={**tab_b, "action": "delete", "kind": "Node", "name": "node-7"})
    assert stale.status_code == 409  # at once: no job started
    message = re.search(r'id="edit-error" class="error">([^<]*)<', stale.text).group(1)
    assert message.startswith("the scenario is at version 2, and this edit was made on version 1")
    stale_apply = client.post("/edit", data={**tab_b, "action": "apply", "yaml": BIG_NODE.replace('"32"', '"2"')})
    assert stale_apply.status_code == 409 and "this edit was made on version 1" in stale_apply.text
    assert client.get("/api/scenario.yaml").text == after_a and "node-7" in _nodes(client)
    assert client.get("/api/jobs").json() == jobs
    # the page the refusal shows is of version 2: sent again from there, the edit goes through
    again = re.search(r'name="version" value="(\d+)"', stale.text).group(1)
    assert again == "2"
    job = _done(client, client.post("/edit", data={**tab_b, "version": again, "action": "delete", "kind": "Node",
                                                   "name": "node-7"}, follow_redirects=False))
    done = client.get(job["result"])
    assert done.status_code == 200 and "deleted Node node-7" in done.text and "node-7" not in _nodes(client)
    assert 'id="scenario-version">version 3<' in done.text


def test_a_form_without_its_version_is_refused(client: TestClient) -> None:
    token = form_fields(client)["csrf_token"]
    answer = client.post("/edit", data={"csrf_token": token, "action": "delete", "kind": "Node", "name": "node-1"})
    assert answer.status_code == 400 and "does not say which version" in answer.text and "node-1" in _nodes(client)
    assert client.get("/api/jobs").json() == []


def test_the_api_takes_a_version_field_or_if_match(client: TestClient) -> None:
    added = client.post("/api/objects", json={"yaml": BIG_NODE, "version": 1})
    assert added.status_code == 202 and added.json()["basedOn"] == 1
    assert _done(client, added)["version"] == 2 and client.get("/api/result").headers[VERSION_HEADER] == "2"
    jobs = client.get("/api/jobs").json()
    stale = client.post("/api/objects", json={"yaml": BIG_NODE}, headers={"If-Match": '"1"'})
    assert stale.status_code == 409
    assert stale.json()["detail"].startswith("the scenario is at version 2, and this edit was made on version 1")
    assert client.delete("/api/objects/Node/node-7", params={"version": 1}).status_code == 409
    assert client.delete("/api/objects/Node/node-7", headers={"If-Match": "1"}).status_code == 409
    assert "node-7" in _nodes(client) and client.get("/api/jobs").json() == jobs  # no job was started
    bad = client.delete("/api/objects/Node/node-7", headers={"If-Match": "yesterday"})
    assert bad.status_code == 400 and "expected the scenario's version, a number" in bad.json()["detail"]
    both = client.delete("/api/objects/Node/node-7", params={"version": 2}, headers={"If-Match": '"3"'})
    assert both.status_code == 400 and "name one" in both.json()["detail"]
    assert _done(client, client.delete("/api/objects/Node/node-7", headers={"If-Match": 'W/"2"'}))["version"] == 3
    # no version at all (curl as before): applied to the scenario as it is
    assert _done(client, client.post("/api/objects", json={"yaml": BIG_NODE}))["version"] == 4
    assert _done(client, client.delete("/api/objects/Node/node-7", headers={"If-Match": "*"}))["version"] == 5
    # a refused edit (bad YAML) does not count as a version
    assert client.post("/api/objects", json={"yaml": "kind: Pod\n"}).status_code == 400
    assert client.get("/api/objects").headers[VERSION_HEADER] == "5"


def test_docs_need_no_network_and_large_answers_are_gzipped(demo_state: UiState) -> None:
    client = ui_client(demo_state)
    docs = client.get("/docs")
    assert docs.status_code == 200
    assert re.findall(r'(?:src|href)="([^"]+)"', docs.text) == [
        "/docs-assets/swagger-ui.css", "/docs-assets/favicon.png", "/docs-assets/swagger-ui-bundle.js"]
    assert "http" not in docs.text and "cdn" not in docs.text  # no address of another server, not even a link
    for asset in ("swagger-ui.css", "swagger-ui-bundle.js", "favicon.png"):
        assert client.get(f"/docs-assets/{asset}").status_code == 200
    assert client.get("/redoc").status_code == 404  # FastAPI's would load its script from a CDN
    timeline = client.get("/api/timeline", headers={"Accept-Encoding": "gzip"})
    assert timeline.headers["content-encoding"] == "gzip"
    raw = client.get("/api/timeline", headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in raw.headers and raw.json() == timeline.json()
    small = client.get("/api/cluster/nodes/node-1", headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in small.headers  # under 1 KiB: not worth it
    # what went over the wire is gzip, and smaller
    with client.stream("GET", "/api/result", headers={"Accept-Encoding": "gzip"}) as streamed:
        wire = b"".join(streamed.iter_raw())
    assert len(wire) < len(client.get("/api/result").content) / 3
    assert gzip.decompress(wire) == client.get("/api/result", headers={"Accept-Encoding": "identity"}).content
