"""deploy/: the RBAC rules grant exactly what kubesched uses. A replica runs through everything it
can do (informers incl. NodeResourceTopology, binding and its 409 check, preemption, status patches,
event series, leader election); every request must be allowed by deploy/rbac.yaml, and every rule
must have been used."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakeapi import FakeApiServer, Fault, Request

from conftest import (
    FAST_LEASE,
    Replica,
    complete_volume_bindings,
    node_of,
    pod,
    pod_with_claims,
    volume_objects,
    wait_for,
)
from kubesched.testkit.builders import make_node, make_priority_class

pytestmark = pytest.mark.timeout(60)

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def rules() -> Iterator[tuple[str | None, dict[str, Any]]]:
    for doc in yaml.safe_load_all((DEPLOY / "rbac.yaml").read_text()):
        if doc["kind"] in ("ClusterRole", "Role"):
            for rule in doc["rules"]:
                yield doc["metadata"].get("namespace") if doc["kind"] == "Role" else None, rule


def attributes(r: Request) -> tuple[str, str, str, str | None, str | None] | None:
    """(group, resource[/subresource], verb, namespace, name) of a resource request; None for discovery."""
    parts = r.path.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    elif len(parts) > 3:
        group, rest = parts[1], parts[3:]
    else:
        return None
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    name = rest[1] if len(rest) > 1 else None
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(r.method)
    if verb is None:
        verb = "watch" if r.query.get("watch") else ("get" if name else "list")
    return group, resource, verb, namespace, name


def allowed(attrs: tuple[str, str, str, str | None, str | None]) -> list[int]:
    group, resource, verb, namespace, name = attrs
    return [i for i, (ns, rule) in enumerate(rules())
            if group in rule["apiGroups"] and resource in rule["resources"] and verb in rule["verbs"]
            and (ns is None or ns == namespace)
            and (not rule.get("resourceNames") or (name in rule["resourceNames"] and verb != "create"))]


def test_rbac_allows_exactly_what_kubesched_does(tmp_path: Path) -> None:
    fake = FakeApiServer(nrt=True).start()
    try:
        fake.create(make_priority_class("low", 100))
        fake.create(make_priority_class("high", 1000))
        fake.create(make_node("n1", cpu="4"))
        fake.create(pod("victim", cpu="3", priority_class="low", node="n1"))
        fake.inject(Fault(method="POST", path="/pods/other/binding$", status=500, after=True))
        replica = Replica(fake, fake.kubeconfig(tmp_path), "a", leader_election=True,
                          lease={**FAST_LEASE}).start()
        fake.create(pod("other", cpu="100m"))
        wait_for(lambda: node_of(fake, "other") == "n1", what="other bound (after a 409 check)")
        for obj in volume_objects():
            fake.create(obj)
        # the pod must find the volume in the scheduler's informer (each kind has its own watch)
        wait_for(lambda: replica.cluster.get("PersistentVolume", "", "pv-1") is not None
                 and replica.cluster.get("PersistentVolumeClaim", "default", "dynamic") is not None,
                 what="volume and claims seen by the scheduler")
        fake.create(pod_with_claims("with-volumes", "static", "dynamic"))
        wait_for(lambda: complete_volume_bindings(fake) or node_of(fake, "with-volumes") == "n1", timeout=15,
                 what="a pod whose volumes the scheduler binds (updates of a volume and a claim)")
        fake.create(pod("preemptor", cpu="2", priority_class="high"))
        wait_for(lambda: fake.requests_matching("DELETE", "/pods/victim$"), what="victim deleted")
        victim = fake.get("Pod", "default", "victim")
        assert victim is not None
        for _ in range(2):
            replica.cluster.record_event(victim, type="Normal", reason="Test", action="Testing", note="same")
        assert replica.cluster.events.flush(5.0)
        replica.stop()
    finally:
        fake.stop()
    used: set[tuple[int, str, str]] = set()
    for request in fake.requests:
        attrs = attributes(request)
        if attrs is None:
            continue
        if attrs[1] == "leases":  # the tests' lease is the default kube-system/kube-scheduler one
            attrs = (*attrs[:4], "kubesched" if attrs[4] else None)
        granted = allowed(attrs)
        assert granted, f"{request.method} {request.path} ({attrs}) is not allowed by deploy/rbac.yaml"
        used.update((i, attrs[1], attrs[2]) for i in granted)
    unused = [(resource, verb) for i, (_, rule) in enumerate(rules())
              for resource in rule["resources"] for verb in rule["verbs"] if (i, resource, verb) not in used]
    assert not unused, f"granted but never needed: {unused}"
