"""Each test's outcome on its item, so that the browser fixture keeps a screenshot of a failure; the
cluster's nodes read from the API page by page; a node to add to the demo."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

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
