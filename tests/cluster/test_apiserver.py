"""The embedded API server facade: the only way to the object store, with admission where the
real API server applies it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from cluster_helpers import get_pod, make_cluster, node, pod, quota

from kubesched.cluster.embedded.apiserver.server import ApiServer
from kubesched.k8s.objects import ApiError, Obj
from kubesched.testkit.builders import make_priority_class

EMBEDDED = Path(__file__).resolve().parents[2] / "src" / "kubesched" / "cluster" / "embedded"


class Audit:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def admitted(self, obj: Obj) -> None:
        self.seen.append(("admitted", obj["metadata"]["name"]))

    def refused(self, obj: Obj, err: ApiError) -> None:
        self.seen.append(("refused", f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']} {err.code}"))


def test_create_runs_priority_admission_and_defaulting() -> None:
    api = make_cluster(controllers=False).api
    api.create(make_priority_class("default-class", 7, globalDefault=True))
    created = api.create(pod("p"))
    assert created["spec"]["priorityClassName"] == "default-class"
    assert (created["spec"]["priority"], created["spec"]["preemptionPolicy"]) == (7, "PreemptLowerPriority")
    assert created["spec"]["schedulerName"] == "default-scheduler"
    assert created["status"]["phase"] == "Pending"
    assert api.get("Pod", "default", "p") == created


def test_a_refused_create_raises_stores_nothing_and_tells_the_audit() -> None:
    api = make_cluster(controllers=False).api
    audit = Audit()
    obj = pod("p", priorityClassName="missing")
    del obj["metadata"]["namespace"]
    with pytest.raises(ApiError) as err:
        api.create(obj, audit=audit)
    assert (err.value.code, err.value.message) == (
        403, 'pods "p" is forbidden: no PriorityClass with name missing was found')
    assert api.get("Pod", "default", "p") is None
    assert audit.seen == [("refused", "default/p 403")]  # the object as defaulted (its namespace)
    assert "namespace" not in obj["metadata"]  # the caller's object is left alone


def test_create_charges_quota_and_provisions_the_namespace() -> None:
    cluster = make_cluster()
    api = cluster.api
    api.create(quota("q", {"pods": "1"}, namespace="team"))
    audit = Audit()
    api.create(pod("a", namespace="team"), audit=audit)
    assert audit.seen == [("admitted", "a")]
    assert api.get("Namespace", None, "team") is not None
    assert api.get("ResourceQuota", "team", "q")["status"]["used"] == {"pods": "1"}
    with pytest.raises(ApiError) as err:
        api.create(pod("b", namespace="team"))
    assert err.value.code == 403 and "exceeded quota: q" in err.value.message


def test_embedded_cluster_create_logs_through_the_audit() -> None:
    cluster = make_cluster(controllers=False)
    assert cluster.create(pod("ok")) is not None
    assert cluster.create(pod("ok")) is None
    assert [(e["reason"], e["pod"]) for e in cluster.log.events] == [
        ("Created", "default/ok"), ("Rejected", "default/ok")]
    assert cluster.log.rejected[-1]["code"] == 409


def test_bind_checks_like_the_binding_subresource() -> None:
    cluster = make_cluster(controllers=False)
    api = cluster.api
    api.create(node("n1"))
    created = api.create(pod("p"))
    with pytest.raises(ApiError) as err:
        api.bind(created, "nope")
    assert (err.value.code, err.value.message) == (404, 'nodes "nope" not found')
    bound = api.bind(created, "n1")
    assert bound["spec"]["nodeName"] == "n1"
    assert [c["type"] for c in bound["status"]["conditions"]] == ["PodScheduled"]
    with pytest.raises(ApiError) as err:
        api.bind(created, "n1")
    assert err.value.code == 409
    gated = api.create(pod("g", schedulingGates=[{"name": "wait"}]))
    with pytest.raises(ApiError) as err:
        api.bind(gated, "n1")
    assert err.value.code == 403
    replaced = {**created, "metadata": {**created["metadata"], "uid": "another"}}
    with pytest.raises(ApiError) as err:
        api.bind(replaced, "n1")
    assert (err.value.code, err.value.message) == (404, 'pods "p" not found')


def test_status_patch_merges_conditions_and_writes_only_changes() -> None:
    api = make_cluster(controllers=False).api
    created = api.create(pod("p"))
    condition = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    patched = api.patch_pod_status(created, {"conditions": [condition], "nominatedNodeName": "n1"})
    assert patched["status"]["nominatedNodeName"] == "n1"
    assert condition in patched["status"]["conditions"]
    version = api.resource_version
    assert api.patch_pod_status(patched, {"conditions": [condition]}) == patched
    assert api.resource_version == version  # nothing changed: nothing written
    cleared = api.patch_pod_status(patched, {"nominatedNodeName": None})
    assert "nominatedNodeName" not in cleared["status"]


def test_system_priority_classes_are_created_through_admission() -> None:
    cluster = make_cluster(controllers=False)
    assert cluster.api.get("PriorityClass", None, "system-node-critical")["value"] == 2_000_001_000
    cluster.api.ensure_system_priority_classes()  # idempotent
    assert cluster.create(pod("p", priorityClassName="system-node-critical")) is not None
    assert get_pod(cluster, "p")["spec"]["priority"] == 2_000_001_000


def test_only_the_api_server_holds_the_object_store() -> None:
    """Outside ``apiserver/`` no module of the embedded cluster imports the store or reaches a
    ``.store`` attribute (the raw store lives behind :class:`ApiServer`)."""
    offenders = []
    for path in sorted(EMBEDDED.rglob("*.py")):
        if path.parent.name == "apiserver":
            continue
        tree = ast.parse(path.read_text())
        for item in ast.walk(tree):
            if isinstance(item, ast.ImportFrom) and (item.module or "").endswith("apiserver.store"):
                offenders.append(f"{path.name}: imports {item.module}")
            elif isinstance(item, ast.Attribute) and item.attr in ("store", "_store"):
                offenders.append(f"{path.name}:{item.lineno}: .{item.attr}")
    assert offenders == []
    cluster = make_cluster(controllers=False)
    assert isinstance(cluster.api, ApiServer)
    assert not hasattr(cluster, "store")  # no back door to the object store
