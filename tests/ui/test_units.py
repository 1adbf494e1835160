"""Quantities as a person reads them on the cluster's pages (cpu in cores or millicores, memory in
the binary unit it reaches), and the nodes sorted by how full they are."""

from __future__ import annotations

from html import unescape
from pathlib import Path

import pytest

from kubesched.api.quantity import readable_quantity, readable_share, resource_amount

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo.yaml")


@pytest.mark.parametrize("text", ["128974848", "129e6", "129M", "128974848000m", "123Mi"])
def test_kubernetes_docs_memory_examples_all_read_about_123mi(text: str) -> None:
    # the Kubernetes documentation's example of one amount of memory written five ways
    assert readable_quantity("memory", resource_amount("memory", text)) == "123Mi"


@pytest.mark.parametrize(("resource", "text", "shown"), [
    ("cpu", "0.1", "100m"), ("cpu", "100m", "100m"), ("cpu", "1", "1"), ("cpu", "1500m", "1.5"),
    ("cpu", "7250m", "7.25"), ("cpu", "15360", "15360"), ("cpu", "9662300m", "9662"), ("cpu", "0", "0"),
    ("memory", "64Mi", "64Mi"), ("memory", "1536Mi", "1.5Gi"), ("memory", "1Gi", "1Gi"),
    ("memory", "10403712Mi", "9.9Ti"), ("memory", "60Ti", "60Ti"), ("memory", "512", "512"),
    ("memory", "1k", "1000"), ("memory", "2Ki", "2Ki"), ("ephemeral-storage", "100Gi", "100Gi"),
    ("nvidia.com/gpu", "4", "4"), ("pods", "110", "110"),
])
def test_readable_quantities(resource: str, text: str, shown: str) -> None:
    assert readable_quantity(resource, resource_amount(resource, text)) == shown


def test_readable_shares_name_the_unit_of_cpu() -> None:
    def share(resource: str, requested: str, allocatable: str) -> str:
        return readable_share(resource, resource_amount(resource, requested), resource_amount(resource, allocatable))

    assert share("memory", "10403712Mi", "60Ti") == "9.9Ti / 60Ti"
    assert share("cpu", "9662300m", "15360") == "9662 / 15360 cores"
    assert share("cpu", "500m", "8") == "500m / 8 cores"
    assert share("cpu", "100m", "500m") == "100m / 500m"
    assert share("nvidia.com/gpu", "5", "12") == "5 / 12"


def test_the_pages_show_readable_amounts_and_sort_nodes_by_use() -> None:
    pytest.importorskip("fastapi")
    from kubesched.ui.state import UiState

    from .conftest import ui_client

    client = ui_client(UiState.load(DEMO))
    node = client.get("/api/cluster/nodes/node-1").json()
    assert (node["cpu"], node["memory"]) == ({"requested": "7500m", "allocatable": "8"},
                                              {"requested": "12Gi", "allocatable": "32Gi"})  # the API stays exact
    assert node["shown"] == {"cpu": "7.5 / 8 cores", "memory": "12Gi / 32Gi"}
    assert "7.5 / 8 cores" in unescape(client.get("/nodes/node-1").text)
    pool = client.get("/api/cluster").json()["pools"][0]
    assert pool["shown"]["cpu"].endswith(" cores") and "Gi" in pool["shown"]["memory"]
    for resource in ("cpu", "memory", "pods"):
        nodes = client.get("/api/cluster/nodes", params={"sort": resource}).json()["nodes"]
        shares = [n[f"{resource}Share"] for n in nodes]
        assert shares == sorted(shares, reverse=True) and len(nodes) == 6
        page = unescape(client.get("/nodes", params={"sort": resource}).text)
        links = [n["node"] for n in nodes]
        assert [page.index(f'href="/nodes/{name}"') for name in links] == sorted(
            page.index(f'href="/nodes/{name}"') for name in links)
    assert client.get("/api/cluster/nodes", params={"sort": "size"}).status_code == 422
