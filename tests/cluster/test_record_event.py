"""``record_event`` takes structured fields; it never reads them back out of the note."""

from __future__ import annotations

from cluster_helpers import make_cluster, node, pod


def test_scheduled_event_takes_the_node_from_the_binding_not_the_note() -> None:
    cluster = make_cluster(controllers=False)
    cluster.create(node("n1"))
    created = cluster.create(pod("p"))
    assert created is not None
    cluster.bind(created, "n1")
    cluster.record_event(created, type="Normal", reason="Scheduled", action="Binding", note="any text at all")
    assert cluster.log.events[-1] == {"time": 0.0, "reason": "Scheduled", "pod": "default/p", "node": "n1"}


def test_an_explicit_node_field_wins() -> None:
    cluster = make_cluster(controllers=False)
    created = cluster.create(pod("p"))
    assert created is not None
    cluster.record_event(created, type="Normal", reason="Scheduled", action="Binding", note="x", node="n9")
    assert cluster.log.events[-1]["node"] == "n9"


def test_preempted_event_names_the_victims_node_and_the_preemptor() -> None:
    cluster = make_cluster(controllers=False)
    victim = {"kind": "Pod", "metadata": {"name": "v", "namespace": "default"}, "spec": {"nodeName": "n1"}}
    preemptor = {"kind": "Pod", "metadata": {"name": "hi", "namespace": "default"}, "spec": {}}
    cluster.record_event(victim, type="Normal", reason="Preempted", action="Preempting",
                         note="Preempted by a pod on node n1", related=preemptor)
    assert cluster.log.events[-1] == {"time": 0.0, "reason": "Preempted", "pod": "default/v", "node": "n1",
                                      "preemptor": "default/hi", "message": "Preempted by a pod on node n1"}
