"""Each test's outcome on its item, so that the browser fixture keeps a screenshot of a failure; the
cluster's nodes read from the API page by page; a node to add to the demo; a test client as a
browser on this machine reaches the app, and the hidden fields its forms carry."""

from __future__ import annotations

import re
import time
from collections.abc import Generator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest

if TYPE_CHECKING:
    from fastapi.testclient import TestClient

    from kubesched.ui.security import Safety
    from kubesched.ui.state import UiState

#: where the test client says it reaches the app (a Host the app answers to)
BASE_URL = "http://127.0.0.1:8750"

#: a node bigger than the demo's, in its zone-b (as a user pastes it into an edit or a what-if)
BIG_NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: node-7
  labels: {kubernetes.io/hostname: node-7, topology.kubernetes.io/zone: zone-b}
status:
  allocatable: {cpu: "32", memory: 128Gi, pods: "110"}
"""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)


def every_node(client: Any, limit: int = 7, **params: str) -> list[dict[str, Any]]:
    """Every node ``GET /api/cluster/nodes`` lists with ``params`` (a pool, a zone, a search), asked
    for ``limit`` at a time, as the cluster page pages through them."""
    rows: list[dict[str, Any]] = []
    while True:
        page = client.get("/api/cluster/nodes", params={**params, "offset": len(rows), "limit": limit}).json()
        rows += page["nodes"]
        if not page["nodes"] or len(rows) >= page["total"]:
            assert len(rows) == page["total"]
            return rows


def pod_href(result: dict[str, Any], key: str) -> str:
    """The link the pages render to the pod ``key`` of a run (its SimulationResult): with the pod's
    identity, URL-encoded."""
    identity = (result["pods"].get(key) or {}).get("identity") or key
    return f"/pods/{key}?id={quote(identity, safe='')}"


def ui_client(state: UiState, safety: Safety | None = None) -> TestClient:
    """A client of the app over ``state`` naming it as a browser on this machine does (127.0.0.1)."""
    from fastapi.testclient import TestClient

    from kubesched.ui.app import create_app

    return TestClient(create_app(state, safety), base_url=BASE_URL)


def form_fields(client: TestClient, path: str = "/edit") -> dict[str, str]:
    """The hidden fields the forms of the page at ``path`` carry: the token of the server process
    and (on the edit page) the version of the scenario the page was rendered from."""
    page = client.get(path).text
    return dict(re.findall(r'<input type="hidden" name="(csrf_token|version)" value="([^"]*)">', page))


def followed(client: Any, answer: Any, timeout: float = 300) -> dict[str, Any]:
    """The job a request started (its answer: the API's 202 with the job, or a page's 303 to the
    job's page) followed to its end, as a script polls ``/api/jobs/ID``: the job as it ended."""
    if answer.status_code == 303:
        where = "/api" + answer.headers["location"]  # /jobs/ID -> /api/jobs/ID
    else:
        assert answer.status_code == 202, answer.text
        where = answer.headers["location"]
    deadline = time.monotonic() + timeout
    while True:
        job: dict[str, Any] = client.get(where).json()
        if job["state"] in ("done", "failed", "cancelled"):
            return job
        assert time.monotonic() < deadline, f"job still {job['state']} after {timeout} s: {job}"
        time.sleep(0.05)


def job_result(client: Any, answer: Any) -> Any:
    """The document a job's result is (its ``apiResult``), once the job is done."""
    job = followed(client, answer)
    assert job["state"] == "done", job
    return client.get(job["apiResult"]).json()
