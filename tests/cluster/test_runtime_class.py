"""RuntimeClass (node.k8s.io/v1) as the RuntimeClass admission plugin applies it: the pod overhead
the scheduler then counts, the class's node selector and tolerations merged into the pod's, and
upstream's refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api.errors import ManifestError
from kubesched.sim import simulate
from kubesched.testkit.builders import make_deployment, make_node, make_pod

GVISOR = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"},
          "handler": "runsc", "overhead": {"podFixed": {"cpu": "500m", "memory": "128Mi"}},
          "scheduling": {"nodeSelector": {"sandbox": "gvisor"},
                         "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}}


def _run(tmp_path: Path, *docs: Any) -> dict[str, Any]:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all(list(docs)))
    return simulate(path).result


def _sandboxed(name: str, cpu: str = "1", **spec: Any) -> dict[str, Any]:
    pod = make_pod(name, cpu=cpu)
    pod["spec"]["runtimeClassName"] = "gvisor"
    pod["spec"].update(spec)
    return pod


def test_overhead_node_selector_and_tolerations_come_from_the_class(tmp_path: Path) -> None:
    sandbox = make_node("sandbox-1", cpu="2", labels={"sandbox": "gvisor"},
                        taints=[{"key": "sandbox", "value": "true", "effect": "NoSchedule"}])
    plain = make_node("plain-1", cpu="8")
    # 1 cpu + 500m overhead each: the 2-cpu sandbox node takes one, the second waits (the plain
    # node does not match the class's node selector)
    result = _run(tmp_path, GVISOR, sandbox, plain, _sandboxed("a"), _sandboxed("b"))
    pods = result["pods"]
    assert (pods["default/a"]["node"], pods["default/b"]["phase"]) == ("sandbox-1", "Pending")
    failed = next(e for e in result["events"] if e["reason"] == "FailedScheduling")
    assert "Insufficient cpu" in failed["message"] and "didn't match Pod's node affinity/selector" in failed["message"]


def test_refusals_as_the_admission_plugin_writes_them(tmp_path: Path) -> None:
    missing = make_pod("nowhere")
    missing["spec"]["runtimeClassName"] = "kata"
    clash = _sandboxed("clash", nodeSelector={"sandbox": "kata"})
    wrong_overhead = _sandboxed("overhead", overhead={"cpu": "1"})
    result = _run(tmp_path, GVISOR, make_node("n1", labels={"sandbox": "gvisor"}), missing, clash, wrong_overhead)
    messages = {r["name"]: (r["code"], r["message"]) for r in result["rejected"]}
    assert messages == {
        "default/nowhere": (403, 'pods "nowhere" is forbidden: pod rejected: RuntimeClass "kata" not found'),
        "default/clash": (403, 'pods "clash" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] = '
                               "gvisor; pod.spec.nodeSelector[sandbox] = kata"),
        "default/overhead": (403, "pods \"overhead\" is forbidden: pod rejected: Pod's Overhead doesn't match "
                                  "RuntimeClass's defined Overhead"),
    }


def test_workload_pods_get_the_class_too(tmp_path: Path) -> None:
    template = _sandboxed("web", cpu="500m")
    result = _run(tmp_path, GVISOR, make_node("sandbox-1", cpu="2", labels={"sandbox": "gvisor"}),
                  make_deployment("web", 3, template))
    running = [p for k, p in result["pods"].items() if k.startswith("default/web-") and p["phase"] == "Running"]
    assert len(running) == 2  # 2 × (500m + 500m overhead) fill the 2-cpu node


def test_an_invalid_runtime_class_is_refused_with_its_field(tmp_path: Path) -> None:
    bad = {**GVISOR, "handler": "Not_A_Label", "overhead": {"podFixed": {"cpu": "lots"}}}
    with pytest.raises(ManifestError, match=r"handler"):
        _run(tmp_path, bad)


def test_a_second_runtime_class_of_a_name_already_exists_as_the_api_server_says(tmp_path: Path) -> None:
    scenario = {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": "again"},
                "spec": {"steps": [{"at": "1s", "create": GVISOR}]}}
    result = _run(tmp_path, scenario, GVISOR, make_node("n1"))
    rejected = [r for r in result["rejected"] if r["kind"] == "RuntimeClass"]
    assert [(r["name"], r["message"]) for r in rejected] == [
        ("gvisor", 'runtimeclasses.node.k8s.io "gvisor" already exists')]
