"""System default spreading takes its selector from the Services that select a pod (with its
controller's): PodTopologySpread indexes Services per namespace until one changes. Services
created, changed and deleted mid-run steer the spreading exactly as a scan of every Service at
every pod does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.scheduler.plugins.podtopologyspread import PodTopologySpread
from kubesched.sim import simulate
from kubesched.testkit.builders import make_node, make_pod
from kubesched.testkit.scenarios import create_step, delete_step, patch_step, scenario_document

ZONE = "topology.kubernetes.io/zone"


def service(name: str, selector: dict[str, str], namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": selector, "ports": [{"port": 80}]}}


def scenario(with_services: bool) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [make_node(f"n{i}", cpu="8", labels={ZONE: f"z{i % 2}"}) for i in range(4)]
    # the first node of z0 is the emptiest by far: without a Service every pod goes to z0's nodes
    docs += [make_pod(f"filler-{i}", "1", "1Gi", node=f"n{i}") for i in (1, 2, 3) for _ in range(3)]
    steps = []
    if with_services:
        steps += [create_step(0, service("web", {"app": "web"})),
                  create_step(20, service("db", {"app": "db"}, namespace="other")),
                  patch_step(40, "Service", "web", {"spec": {"selector": {"app": "web", "tier": "x"}}}),
                  delete_step(60, "Service", "web")]
    for k in range(16):
        steps.append(create_step(k * 5 + 1, make_pod(f"web-{k}", "100m", "128Mi",
                                                     labels={"app": "web", "tier": "x" if k % 2 else "y"})))
    return docs + [scenario_document(steps=steps, until="100s", seed=4, name="svc")]


def run(path: Path) -> dict[str, Any]:
    return simulate(str(path)).result


def test_indexed_services_decide_as_a_full_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all(scenario(True)))
    indexed = run(path)
    with monkeypatch.context() as m:
        m.setattr(PodTopologySpread, "_services", lambda self, namespace: [
            s for s in self.handle.list("Service") if (s["metadata"].get("namespace") or "default") == namespace])
        scanned = run(path)
    assert json.dumps(indexed) == json.dumps(scanned)
    # and the Services matter: without them the pods land elsewhere
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump_all(scenario(False)))
    nodes = {name: p.get("node") for name, p in indexed["pods"].items() if "web-" in name}
    assert nodes != {name: p.get("node") for name, p in run(plain)["pods"].items() if "web-" in name}
