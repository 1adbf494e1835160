"""kubesched replay with the recorded controllers replayed: a Deployment's pods are made by the
replay's controllers and paired with the recorded ones by identity (owner and creation order), a
replacement the recorded ReplicaSet made after a preemption is the replay's controller's business, a
bare pod created again while the replay still runs it goes on running, and label changes of pods
are replayed (by identity for a controller's pod)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.replay.test_replay import Log, classes

from kubesched.replay import read_audit_log, replay
from kubesched.replay.compare import replay as replay_fn
from kubesched.replay.dynamic import RunTimeSteps, split_recreations
from kubesched.replay.timeline import RECREATION
from kubesched.sim import simulate

RS_CONTROLLER = "system:serviceaccount:kube-system:replicaset-controller"
TEMPLATE = {"metadata": {"labels": {"app": "batch"}},
            "spec": {"priorityClassName": "batch",
                     "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1500m"}}}]}}


def _deployment(log: Log, at: float) -> None:
    deployment = {"kind": "Deployment", "apiVersion": "apps/v1",
                  "metadata": {"name": "batch", "namespace": "default", "uid": "u-deploy", "resourceVersion": "3"},
                  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "batch"}}, "template": TEMPLATE}}
    log.event(at, "create", "deployments", "batch", request=deployment, response=deployment)
    rs = {"kind": "ReplicaSet", "apiVersion": "apps/v1",
          "metadata": {"name": "batch-7f9", "namespace": "default", "uid": "u-rs", "resourceVersion": "4",
                       "labels": {"app": "batch", "pod-template-hash": "7f9"},
                       "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "batch",
                                            "uid": "u-deploy", "controller": True}]},
          "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "batch", "pod-template-hash": "7f9"}},
                   "template": TEMPLATE}}
    log.event(at + 0.01, "create", "replicasets", "batch-7f9", request=rs, response=rs,
              user="system:serviceaccount:kube-system:deployment-controller")


def _rs_pod(log: Log, at: float, name: str) -> None:
    pod = {"kind": "Pod", "apiVersion": "v1",
           "metadata": {"name": name, "generateName": "batch-7f9-", "namespace": "default", "uid": f"u-{name}",
                        "resourceVersion": "9", "labels": {"app": "batch", "pod-template-hash": "7f9"},
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "batch-7f9",
                                             "uid": "u-rs", "controller": True}]},
           "spec": {**TEMPLATE["spec"], "priority": 100}}  # type: ignore[dict-item]
    log.event(at, "create", "pods", name, request=pod, response=pod, user=RS_CONTROLLER)


def controller_log(tmp_path: Path) -> Path:
    """n1 (4 cpu) runs the Deployment's two 1.5-cpu pods and a bare 0.5-cpu ``solo``; a PDB guards
    pods labelled ``tier=gold``, and a user labels the first batch pod so. web-1 (2 cpu, online)
    arrives: the recorded scheduler preempted the other batch pod and ``solo``; the ReplicaSet made
    a replacement (pending: no room); a user created ``solo`` again."""
    log = Log()
    classes(log)
    log.node(0.0, "n1")
    pdb = {"kind": "PodDisruptionBudget", "apiVersion": "policy/v1", "metadata": {"name": "gold", "namespace": "default"},
           "spec": {"minAvailable": 1, "selector": {"matchLabels": {"tier": "gold"}}}}
    log.event(0.5, "create", "poddisruptionbudgets", "gold", request=pdb, response=pdb)
    _deployment(log, 1.0)
    _rs_pod(log, 1.1, "batch-7f9-aaaaa")
    _rs_pod(log, 1.2, "batch-7f9-bbbbb")
    log.bind(1.3, "batch-7f9-aaaaa", "n1")
    log.bind(1.4, "batch-7f9-bbbbb", "n1")
    log.pod(2.0, "solo", "500m", "batch", 100)
    log.bind(2.1, "solo", "n1")
    log.event(3.0, "patch", "pods", "batch-7f9-aaaaa", code=200, level="Request",
              request={"metadata": {"labels": {"tier": "gold"}}})
    log.pod(5.0, "web-1", "2", "online", 1000)
    log.delete(5.1, "batch-7f9-bbbbb", user="system:kube-scheduler")
    log.delete(5.1, "solo", user="system:kube-scheduler")
    _rs_pod(log, 5.2, "batch-7f9-ccccc")
    log.bind(6.0, "web-1", "n1")
    log.pod(8.0, "solo", "500m", "batch", 100)
    log.event(60.0, "patch", "nodes", "n1", namespace="", code=200, request={"metadata": {"labels": {"x": "y"}}},
              level="Request")
    return log.write(tmp_path / "audit.log")


def _pods(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["pod"]: p for p in doc["pods"]}


def test_the_reader_leaves_a_controllers_pods_to_it(tmp_path: Path) -> None:
    history = read_audit_log(controller_log(tmp_path))
    counts = history.report.counts
    assert counts["workload creations"] == 1  # the Deployment; its ReplicaSet is its controller's
    assert counts["ReplicaSets of replayed Deployments (their controller's)"] == 1
    assert counts["pods made by replayed controllers (the reference)"] == 3
    assert counts["pod label and annotation changes"] == 1
    created = [s.name for s in history.scenario.steps if s.action == "create" and s.kind == "Pod"]
    assert created == ["solo", "web-1", "solo"]  # no step creates a batch pod
    identities = {r.pod: r.identity for r in history.recorded}
    assert identities["default/batch-7f9-aaaaa"] == "default/Deployment/batch@1#0"
    assert identities["default/batch-7f9-ccccc"] == "default/Deployment/batch@1#2"
    assert identities["default/solo"] is None
    (patch,) = history.identity_steps
    assert (patch.action, patch.identity, patch.merge) == (
        "patch", "default/Deployment/batch@1#0", {"metadata": {"labels": {"tier": "gold"}}})


def test_the_replays_controller_makes_the_replacement_and_pairs_by_identity(tmp_path: Path) -> None:
    history = read_audit_log(controller_log(tmp_path))
    doc = replay(history)
    pods = _pods(doc)
    assert doc["run"]["rejected"] == [] and doc["run"]["missedWrites"] == []
    first, second, third = (pods[f"default/batch-7f9-{c * 5}"] for c in "abc")
    # the replay's pods have names of their own, paired by identity
    assert first["replay"]["pod"].startswith("default/batch-") and first["replay"]["pod"] != "default/batch-7f9-aaaaa"
    assert first["replay"]["node"] == "n1" and first["replay"]["preempted"] is None  # gold: the PDB keeps it
    assert second["replay"]["preempted"] is not None and second["recorded"]["preempted"] is not None
    assert third["replay"]["bound"] is None and "notCreated" not in third["replay"]  # made again, pending
    assert pods["default/web-1"]["replay"]["node"] == "n1"
    assert doc["summary"]["agreement"]["bound"] == {"agree": 6, "of": 6, "rate": 1.0}
    assert doc["replayOnly"] == []


def test_without_preemption_no_replacement_and_the_pod_goes_on_running(tmp_path: Path) -> None:
    history = read_audit_log(controller_log(tmp_path))
    scenario = history.scenario
    scenario.scheduler_configuration = {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}]}
    doc = replay_fn(history, scenario)
    pods = _pods(doc)
    assert pods["default/batch-7f9-ccccc"]["replay"] == {**pods["default/batch-7f9-ccccc"]["replay"],
                                                         "notCreated": True, "bound": None}
    solos = [p for p in doc["pods"] if p["pod"] == "default/solo"]
    assert [s["created"] for s in solos] == [2.0, 8.0]
    assert solos[0]["replay"]["node"] == "n1" and solos[1]["replay"] == {**solos[1]["replay"], "keptRunning": True}
    assert doc["run"]["rejected"] == []  # the re-creation is no longer refused as a duplicate
    assert pods["default/web-1"]["replay"]["bound"] is None


def test_the_label_change_reaches_the_replays_pod(tmp_path: Path) -> None:
    history = read_audit_log(controller_log(tmp_path))
    scenario, recreations = split_recreations(history.scenario, RECREATION)
    steps = RunTimeSteps(list(history.identity_steps), recreations)
    outcome = simulate(scenario, until=4.0, on_start=steps.attach)
    sim = outcome.simulation
    labels = {key: sim.history.labels[key].get("tier") for key, ident in sim.identities.of.items()
              if ident.startswith("default/Deployment/batch@1#")}
    assert sorted(labels.values(), key=str) == [None, "gold"]
    gold = next(k for k, v in labels.items() if v == "gold")
    assert sim.identities.of[gold] == "default/Deployment/batch@1#0"


def test_a_snapshots_workload_adopts_its_running_pods_and_replaces_a_deleted_one(tmp_path: Path) -> None:
    """Metadata-level log, the workload and its pods in --snapshot: restored as existing at the
    start (nothing made again), and a user's deletion of one pod is made good by the controller."""
    rs = {"kind": "ReplicaSet", "apiVersion": "apps/v1",
          "metadata": {"name": "web", "namespace": "default", "uid": "u-rs", "resourceVersion": "5"},
          "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}},
                                "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    pods = [{"kind": "Pod", "apiVersion": "v1",
             "metadata": {"name": f"web-{c}", "generateName": "web-", "namespace": "default", "uid": f"u-{c}",
                          "resourceVersion": "7", "labels": {"app": "web"},
                          "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                               "uid": "u-rs", "controller": True}]},
             "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}} for c in ("aaaaa", "bbbbb")]
    log = Log()
    log.node(0.0, "n1")
    log.event(10.0, "delete", "pods", "web-aaaaa", code=200, level="Metadata")
    log.event(30.0, "patch", "nodes", "n1", namespace="", code=200, level="Request",
              request={"metadata": {"labels": {"x": "y"}}})
    history = read_audit_log(log.write(tmp_path / "audit.log"), snapshot=[rs, *pods])
    assert history.report.counts["workloads at the start"] == 1
    assert history.report.counts["pods running at the start"] == 2
    (delete,) = history.identity_steps
    assert (delete.action, delete.identity) == ("delete", "default/web-aaaaa")
    doc = replay(history)
    assert doc["run"]["missedWrites"] == [] and doc["run"]["rejected"] == []
    assert [p["identity"] for p in doc["replayOnly"]] == ["default/ReplicaSet/web#0"]  # the replacement
    assert doc["replayOnly"][0]["node"] == "n1"
