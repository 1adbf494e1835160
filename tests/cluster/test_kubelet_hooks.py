"""The simulated kubelet's declared hooks: pod admit handlers and lifecycle handlers register
through the node agent and are called in registration order."""

from __future__ import annotations

from typing import Any

from cluster_helpers import bind, get_pod, make_cluster, node, pod, run

from kubesched.cluster.embedded.kubelet.lifecycle import ADMIT, PodAdmitResult
from kubesched.cluster.embedded.kubelet.nodeagent import KUBELET_REJECTION_DELAY
from kubesched.k8s.objects import Obj


class Refuse:
    def __init__(self, calls: list[str], name: str, refuse: bool) -> None:
        self.calls, self.name, self.refuse = calls, name, refuse

    def admit(self, pod: Obj, node: Obj) -> PodAdmitResult:
        self.calls.append(f"{self.name}:{pod['metadata']['name']}@{node['metadata']['name']}")
        return PodAdmitResult.refuse("NoWay", f"refused by {self.name}") if self.refuse else ADMIT


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, Any]] = []

    def pod_started(self, pod: Obj, node: str) -> None:
        self.events.append(("started", pod["metadata"]["name"], node, pod["status"]["phase"]))

    def pod_stopped(self, pod: Obj, node: str) -> None:
        self.events.append(("stopped", pod["metadata"]["name"], node, pod["status"]["phase"]))


def test_admit_handlers_are_asked_in_order_and_the_first_refusal_fails_the_pod() -> None:
    cluster = make_cluster(controllers=False)
    calls: list[str] = []
    cluster.node_agent.add_pod_admit_handler(Refuse(calls, "first", refuse=False))
    cluster.node_agent.add_pod_admit_handler(Refuse(calls, "second", refuse=True))
    cluster.node_agent.add_pod_admit_handler(Refuse(calls, "third", refuse=False))
    cluster.create(node("n1"))
    cluster.create(pod("p"))
    bind(cluster, "p")
    assert calls == ["first:p@n1", "second:p@n1"]  # the third is not asked
    assert get_pod(cluster, "p")["status"]["phase"] == "Pending"
    run(cluster, KUBELET_REJECTION_DELAY)
    status = get_pod(cluster, "p")["status"]
    assert (status["phase"], status["reason"], status["message"]) == ("Failed", "NoWay", "Pod was rejected: refused by second")
    failed = [e for e in cluster.log.events if e.get("phase") == "Failed"]
    assert failed == [{"time": KUBELET_REJECTION_DELAY, "reason": "NoWay", "pod": "default/p", "node": "n1",
                       "message": "refused by second", "phase": "Failed"}]


def test_admitted_pod_starts_and_lifecycle_handlers_hear_start_and_stop() -> None:
    cluster = make_cluster(controllers=False)
    first, second = Recorder(), Recorder()
    cluster.node_agent.add_pod_admit_handler(Refuse([], "ok", refuse=False))
    cluster.node_agent.add_lifecycle_handler(first)
    cluster.node_agent.add_lifecycle_handler(second)
    cluster.create(node("n1"))
    done = pod("done")
    done["metadata"]["annotations"] = {"kubesched.io/run-for": "5s"}
    cluster.create(done)
    cluster.create(pod("deleted"))
    bind(cluster, "done")
    bind(cluster, "deleted")
    cluster.delete("Pod", "default", "deleted", grace=0)
    run(cluster, 10.0)
    assert first.events == [
        ("started", "done", "n1", "Running"),
        ("started", "deleted", "n1", "Running"),
        ("stopped", "deleted", "n1", "Running"),  # removed while running
        ("stopped", "done", "n1", "Succeeded"),  # turned terminal
    ]
    assert second.events == first.events


def test_a_refused_pod_is_never_reported_started() -> None:
    cluster = make_cluster(controllers=False)
    recorder = Recorder()
    cluster.node_agent.add_pod_admit_handler(Refuse([], "no", refuse=True))
    cluster.node_agent.add_lifecycle_handler(recorder)
    cluster.create(node("n1"))
    cluster.create(pod("p"))
    bind(cluster, "p")
    run(cluster, 2 * KUBELET_REJECTION_DELAY)
    assert recorder.events == []
