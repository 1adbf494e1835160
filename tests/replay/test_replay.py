"""kubesched replay: the audit log reader (dirty lines counted and skipped), replays that agree
with the recording where the answer is forced, preemption on vs off, and the openb excerpt end to
end. The audit logs here are written by the tests in the audit.k8s.io/v1 Event schema, for what the
log recorded from a real API server (test_recorded.py) does not show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubesched.cli.main import cli
from kubesched.replay import read_audit_log, read_openb, replay
from kubesched.replay.timeline import Window

DATA = Path(__file__).parent / "data"


def stamp(seconds: float) -> str:
    whole = int(seconds)
    return f"2024-05-07T10:{whole // 60:02d}:{whole % 60:02d}.{int(round((seconds - whole) * 1e6)):06d}Z"


class Log:
    """Audit events as the API server writes them (one JSON object per line)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.n = 0

    def event(self, at: float, verb: str, resource: str, name: str, *, namespace: str = "default",
              subresource: str = "", code: int = 201, request: Any = None, response: Any = None,
              level: str = "RequestResponse", user: str = "admin", audit_id: str | None = None) -> str:
        self.n += 1
        ref = {"resource": resource, "name": name, "apiVersion": "v1"}
        if namespace:
            ref["namespace"] = namespace
        if subresource:
            ref["subresource"] = subresource
        path = f"/api/v1/namespaces/{namespace}/{resource}" if namespace else f"/api/v1/{resource}"
        event: dict[str, Any] = {
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level,
            "auditID": audit_id or f"00000000-0000-0000-0000-{self.n:012d}", "stage": "ResponseComplete",
            "requestURI": path, "verb": verb, "user": {"username": user, "groups": ["system:authenticated"]},
            "sourceIPs": ["127.0.0.1"], "userAgent": "test", "objectRef": ref,
            "responseStatus": {"metadata": {}, "code": code},
            "requestReceivedTimestamp": stamp(at), "stageTimestamp": stamp(at)}
        if request is not None and level in ("Request", "RequestResponse"):
            event["requestObject"] = request
        if response is not None and level == "RequestResponse":
            event["responseObject"] = response
        line = json.dumps(event)
        self.lines.append(line)
        return line

    def node(self, at: float, name: str, cpu: str = "4", labels: dict[str, str] | None = None) -> None:
        obj = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": name, "uid": f"u-{name}",
                                                               "labels": labels or {}},
               "status": {"capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                          "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}}
        self.event(at, "create", "nodes", name, namespace="", request=obj, response=obj, user="system:node:" + name)

    def pod(self, at: float, name: str, cpu: str, pc: str | None = None, priority: int = 0, **kw: Any) -> None:
        spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}
        response = {"kind": "Pod", "apiVersion": "v1",
                    "metadata": {"name": name, "namespace": "default", "uid": f"u-{name}", "resourceVersion": "7"},
                    "spec": {**spec, "priority": priority, **({"priorityClassName": pc} if pc else {})},
                    "status": {"phase": "Pending", "qosClass": "Burstable"}}
        request = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": name},
                   "spec": {**spec, **({"priorityClassName": pc} if pc else {})}}
        self.event(at, "create", "pods", name, request=request, response=response, **kw)

    def bind(self, at: float, name: str, node: str) -> None:
        self.event(at, "create", "pods", name, subresource="binding", user="system:kube-scheduler",
                   request={"kind": "Binding", "apiVersion": "v1", "metadata": {"name": name, "namespace": "default"},
                            "target": {"kind": "Node", "name": node}},
                   response={"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})

    def delete(self, at: float, name: str, user: str = "admin") -> None:
        self.event(at, "delete", "pods", name, code=200, user=user,
                   request={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})

    def write(self, path: Path) -> Path:
        path.write_text("".join(line + "\n" for line in self.lines))
        return path


def classes(log: Log) -> None:
    for name, value in (("batch", 100), ("online", 1000)):
        obj = {"kind": "PriorityClass", "apiVersion": "scheduling.k8s.io/v1", "metadata": {"name": name},
               "value": value}
        log.event(0.0, "create", "priorityclasses", name, namespace="", request=obj, response=obj)


def test_dirty_lines_are_counted_and_skipped(tmp_path: Path) -> None:
    log = Log()
    log.node(0.0, "n1")
    log.pod(2.0, "b", "1")
    log.pod(1.0, "a", "1")  # written after b, happened before: out of order
    log.bind(3.0, "a", "n1")
    duplicate = log.lines[-1]
    log.lines.append(duplicate)  # the same auditID again
    log.event(3.5, "create", "configmaps", "cfg")  # a resource a replay does not play
    log.event(3.6, "create", "pods", "refused", code=403)  # a failed request
    log.lines.append(log.lines[1][:57])  # cut mid-line
    path = log.write(tmp_path / "audit.log")
    history = read_audit_log(path)
    report = history.report.to_dict()
    assert report["skipped"]["truncated or invalid lines"] == 1
    assert report["examples"]["truncated or invalid lines"] == ["audit.log:8"]
    assert report["skipped"]["duplicate events (auditID seen before)"] == 1
    assert report["unknownResources"] == {"configmaps": 1}
    assert report["counts"]["events out of order (sorted)"] == 1
    assert report["counts"]["failed requests (ignored)"] == 1
    assert [(r.pod, r.created, r.bound, r.node) for r in history.recorded] == [
        ("default/a", 1.0, 3.0, "n1"), ("default/b", 2.0, None, None)]
    # the pods are created unbound: the binding is the reference, not a step
    creates = [s for s in history.scenario.steps if s.kind == "Pod"]
    assert [s.name for s in creates] == ["a", "b"] and all("nodeName" not in s.obj["spec"] for s in creates)


def test_one_node_that_fits_agrees_with_the_recording(tmp_path: Path) -> None:
    log = Log()
    log.node(0.0, "small", cpu="1")
    log.node(0.0, "big", cpu="8")
    for i in range(3):
        log.pod(10.0 + i, f"p{i}", "2")
        log.bind(10.5 + i, f"p{i}", "big")
    log.delete(30.0, "p0")
    doc = replay(read_audit_log(log.write(tmp_path / "audit.log")))
    assert doc["summary"]["agreement"]["bound"] == {"agree": 3, "of": 3, "rate": 1.0}
    assert doc["summary"]["agreement"]["node"] == {"agree": 3, "of": 3, "rate": 1.0}
    assert [p["replay"]["node"] for p in doc["pods"]] == ["big", "big", "big"]
    assert [p["recorded"]["waited"] for p in doc["pods"]] == [0.5, 0.5, 0.5]


def preemption_log(tmp_path: Path) -> Path:
    """One 4-cpu node full of a batch pod; an online pod arrives. The real scheduler preempted."""
    log = Log()
    classes(log)
    log.node(0.0, "n1")
    log.pod(1.0, "batch-1", "3", "batch", 100)
    log.bind(1.2, "batch-1", "n1")
    log.pod(5.0, "web-1", "2", "online", 1000)
    log.delete(5.1, "batch-1", user="system:kube-scheduler")
    log.bind(6.0, "web-1", "n1")
    log.event(60.0, "patch", "nodes", "n1", namespace="", code=200,
              request={"spec": {"unschedulable": True}}, level="Request")
    return log.write(tmp_path / "audit.log")


def test_preemption_on_and_off_differ_as_expected(tmp_path: Path) -> None:
    path = preemption_log(tmp_path)
    runner = CliRunner()
    on = runner.invoke(cli, ["replay", str(path), "-o", "json"])
    off = runner.invoke(cli, ["replay", str(path), "-o", "json", "--disable-preemption"])
    assert on.exit_code == 0, on.output
    assert off.exit_code == 0, off.output
    on_doc, off_doc = json.loads(on.stdout), json.loads(off.stdout)
    by_pod = {p["pod"]: p for p in on_doc["pods"]}
    assert by_pod["default/batch-1"]["replay"]["preempted"] is not None
    assert by_pod["default/batch-1"]["recorded"]["preempted"] == pytest.approx(5.1)
    assert by_pod["default/web-1"]["replay"]["node"] == "n1"
    assert on_doc["summary"]["agreement"]["bound"]["rate"] == 1.0
    by_pod = {p["pod"]: p for p in off_doc["pods"]}
    assert by_pod["default/batch-1"]["replay"]["preempted"] is None
    assert by_pod["default/web-1"]["replay"]["bound"] is None  # waits: nobody makes room
    assert off_doc["changes"] == ["disable preemption"]
    online = next(c for c in off_doc["byClass"] if c["priorityClass"] == "online")
    assert online["recorded"]["bound"] == 1 and online["replay"]["notBound"] == 1
    assert "read " in off.stderr and "steps" in off.stderr


def test_metadata_level_takes_specs_from_the_snapshot_and_window(tmp_path: Path) -> None:
    log = Log()
    log.node(0.0, "n1")
    log.pod(1.0, "early", "1", level="Metadata")
    log.event(2.0, "create", "pods", "early", subresource="binding", level="Metadata")
    log.pod(100.0, "late", "1", level="Metadata")
    log.pod(101.0, "unknown", "1", level="Metadata")
    snapshot = [{"kind": "Pod", "apiVersion": "v1", "metadata": {"name": n, "namespace": "default"},
                 "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i",
                                                             "resources": {"requests": {"cpu": "1"}}}]}}
                for n in ("early", "late")]
    history = read_audit_log(log.write(tmp_path / "audit.log"), snapshot=snapshot, window=Window("1m"))
    assert history.report.counts["pods running at the start"] == 1  # early: bound before the window
    assert [r.pod for r in history.recorded] == ["default/late"]
    assert history.report.skipped["pod creations without a spec (Metadata level, not in --snapshot)"] == 1
    assert history.scenario.until == pytest.approx(41.0)


def test_bad_window_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["replay", str(preemption_log(tmp_path)), "--from", "yesterday"])
    assert result.exit_code == 2
    assert "--from 'yesterday'" in result.stderr


def test_openb_excerpt_replays_with_the_mapping() -> None:
    history = read_openb(DATA / "openb")
    assert len(history.recorded) == 200 and history.report.counts["nodes"] == 16
    steps = {s.name: s for s in history.scenario.steps if s.action == "create"}
    constrained = steps["openb-pod-0011"].obj  # V100M16|V100M32, one whole GPU, LS
    terms = constrained["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["V100M16", "V100M32"]
    assert constrained["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "1"
    assert constrained["spec"]["priorityClassName"] == "openb-ls"
    shared = steps["openb-pod-0012"].obj["spec"]["containers"][0]["resources"]["requests"]
    assert shared == {"cpu": "16000m", "memory": "65536Mi", "kubesched.io/gpu-milli": "220"}
    doc = replay(history)
    placed = {p["pod"]: p["replay"]["node"] for p in doc["pods"]}
    nodes = history.nodes
    node = nodes[placed["default/openb-pod-0011"]]
    assert node["metadata"]["labels"]["kubesched.io/gpu-model"] in ("V100M16", "V100M32")
    assert doc["summary"]["pods"] == 200 and doc["summary"]["agreement"]["bound"]["of"] == 200
    assert doc["summary"]["agreement"]["node"]["of"] == 0  # the trace has no node names
