"""End to end against the fake API server: binding, preemption, nominations, events, informers."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from fakeapi import FakeApiServer
from fakefaults import Fault

from conftest import SCHEDULER, Replica, node_of, pod, wait_for
from kubesched.scheduler.features import ASYNC_PREEMPTION
from kubesched.testkit.builders import make_node, make_pdb, make_priority_class

pytestmark = pytest.mark.timeout(60)


def events_for(fake: FakeApiServer, name: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in fake.list("Event") if e["regarding"]["name"] == name and e["reason"] == reason]


def test_pods_are_bound_and_events_recorded(fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    for name in ("n1", "n2"):
        fake.create(make_node(name))
    for i in range(12):  # more than a list page: the informers paginate
        fake.create(pod(f"early-{i}"))
    fake.create(pod("not-ours", scheduler_name="default-scheduler"))
    replica = replicas("a")
    for i in range(5):  # seen through the watch
        fake.create(pod(f"late-{i}"))
    names = [f"early-{i}" for i in range(12)] + [f"late-{i}" for i in range(5)]
    wait_for(lambda: all(node_of(fake, n) for n in names), what="all pods bound")
    assert node_of(fake, "not-ours") is None
    for name in names:
        current = fake.get("Pod", "default", name)
        assert current is not None
        assert {"type": "PodScheduled", "status": "True"}.items() <= current["status"]["conditions"][0].items()
        assert len(fake.requests_matching("POST", f"/pods/{name}/binding$")) == 1
    assert fake.requests_matching("POST", "/pods/not-ours/binding$") == []

    wait_for(lambda: all(events_for(fake, n, "Scheduled") for n in names), what="Scheduled events")
    event = events_for(fake, "early-0", "Scheduled")[0]
    assert event["apiVersion"] == "events.k8s.io/v1"
    assert event["type"] == "Normal" and event["action"] == "Binding"
    assert event["note"] == f"Successfully assigned default/early-0 to {node_of(fake, 'early-0')}"
    assert event["reportingController"] == SCHEDULER
    assert event["reportingInstance"] == f"{SCHEDULER}-a"
    assert event["regarding"]["kind"] == "Pod" and event["regarding"]["uid"]
    assert event["eventTime"].endswith("Z") and len(event["eventTime"].split(".")[1]) == 7

    wait_for(lambda: replica.sample("scheduler_schedule_attempts_total", profile="kubesched", result="scheduled") == 17)
    assert replica.sample("scheduler_pod_scheduling_attempts_bucket", le="1.0") == 17
    # durations under upstream's names and labels
    assert replica.sample("scheduler_scheduling_attempt_duration_seconds_count", profile="kubesched",
                          result="scheduled") == 17
    assert replica.sample("scheduler_pod_scheduling_sli_duration_seconds_count", attempts="1") == 17
    assert replica.sample("scheduler_framework_extension_point_duration_seconds_count", extension_point="Filter",
                          profile="kubesched", status="Success") == 17
    assert replica.sample("scheduler_framework_extension_point_duration_seconds_count", extension_point="Bind",
                          profile="kubesched", status="Success") == 17
    # plugins are timed in a sample of the cycles (10%, as upstream)
    sampled = replica.sample("scheduler_plugin_execution_duration_seconds_count", extension_point="Filter",
                             plugin="NodeResourcesFit", status="Success")
    assert sampled is not None and 1 <= sampled < 17
    assert replica.sample("scheduler_queue_incoming_pods_total", event="PodAdd", queue="active") == 17
    assert replica.sample("scheduler_scheduler_cache_size", type="pods") == 17
    assert replica.sample("rest_client_requests_total", code="201", host=fake.url.split("//")[1], method="POST")
    assert replica.sample("process_cpu_seconds_total") is not None


def test_preemption_marks_deletes_gracefully_and_nominates(
        fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    fake.create(make_priority_class("low", 100))
    fake.create(make_priority_class("high", 1000))
    fake.create(make_node("n1", cpu="4"))
    fake.create(pod("victim", cpu="3", priority_class="low", node="n1", grace=30))
    replica = replicas("a")
    fake.create(pod("preemptor", cpu="2", priority_class="high"))

    def victim_terminating() -> bool:
        v = fake.get("Pod", "default", "victim")
        return v is not None and bool(v["metadata"].get("deletionTimestamp"))

    wait_for(victim_terminating, what="victim terminating")
    victim = fake.get("Pod", "default", "victim")
    assert victim is not None
    target = [c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert target and target[0]["status"] == "True" and target[0]["reason"] == "PreemptionByScheduler"
    assert victim["metadata"]["deletionGracePeriodSeconds"] == 30
    deletes = fake.requests_matching("DELETE", "/pods/victim$")
    assert len(deletes) == 1
    assert deletes[0].body["preconditions"] == {"uid": victim["metadata"]["uid"]}
    assert "gracePeriodSeconds" not in deletes[0].body

    def nominated() -> bool:
        p = fake.get("Pod", "default", "preemptor")
        return p is not None and p["status"].get("nominatedNodeName") == "n1"

    wait_for(nominated, what="nominatedNodeName patched")
    preemptor = fake.get("Pod", "default", "preemptor")
    assert preemptor is not None and node_of(fake, "preemptor") is None
    scheduled = [c for c in preemptor["status"]["conditions"] if c["type"] == "PodScheduled"][0]
    assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
    assert scheduled["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")

    wait_for(lambda: events_for(fake, "victim", "Preempted"), what="Preempted event")
    preempted = events_for(fake, "victim", "Preempted")[0]
    assert preempted["note"] == "Preempted by a pod on node n1"
    assert preempted["action"] == "Preempting" and preempted["type"] == "Normal"
    assert preempted["related"]["name"] == "preemptor"
    assert preempted["reportingController"] == SCHEDULER
    wait_for(lambda: events_for(fake, "preemptor", "FailedScheduling"), what="FailedScheduling event")

    fake.finish_deletion("default", "victim")  # the kubelet is done
    wait_for(lambda: node_of(fake, "preemptor") == "n1", what="preemptor bound after the victim left")
    wait_for(lambda: replica.sample("scheduler_preemption_victims_count") == 1)
    assert replica.sample("scheduler_preemption_victims_bucket", le="1.0") == 1


def test_async_preemption_goes_on_with_other_pods_while_the_victims_go(
        fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    """SchedulerAsyncPreemption: the API server holds the victim's DELETE until another pod created
    after the preemptor is bound, which only a scheduling thread that does not wait for the deletion
    can do. The preemptor is nominated at once and not retried while its preemption is under way;
    it is bound once the victim has left."""
    fake.create(make_priority_class("low", 100))
    fake.create(make_priority_class("high", 1000))
    fake.create(make_node("n1", cpu="4"))
    fake.create(make_node("n2", cpu="1"))
    fake.create(pod("victim", cpu="3", priority_class="low", node="n1", grace=30))

    bound_meanwhile: list[str | None] = []

    def hold_until_other_is_bound(server: FakeApiServer) -> None:
        """Within the client's 5 s request timeout, so that it does not give up on the DELETE."""
        try:
            wait_for(lambda: node_of(server, "other"), timeout=4.0)
        except AssertionError:
            pass
        bound_meanwhile.append(node_of(server, "other"))

    held = fake.inject(Fault(method="DELETE", path="/pods/victim$", status=None, action=hold_until_other_is_bound))
    replica = replicas("a", feature_gates={ASYNC_PREEMPTION: True})
    fake.create(pod("preemptor", cpu="2", priority_class="high"))

    def nominated() -> bool:
        p = fake.get("Pod", "default", "preemptor")
        return p is not None and p["status"].get("nominatedNodeName") == "n1"

    wait_for(nominated, what="nominatedNodeName patched")
    fake.create(pod("other", cpu="500m"))
    wait_for(lambda: held.hits == 1 and fake.requests_matching("DELETE", "/pods/victim$"), what="the victim deleted")
    victim = fake.get("Pod", "default", "victim")
    assert victim is not None and victim["metadata"].get("deletionTimestamp")
    # bound while the victim's DELETE was held, to n2: n1's free cpu is the nominated preemptor's
    assert bound_meanwhile == ["n2"]
    # the event is sent in the background, after the nomination: wait for it before counting
    wait_for(lambda: events_for(fake, "preemptor", "FailedScheduling"), what="FailedScheduling event")
    assert len(events_for(fake, "preemptor", "FailedScheduling")) == 1  # not retried meanwhile
    fake.finish_deletion("default", "victim")  # the kubelet is done
    wait_for(lambda: node_of(fake, "preemptor") == "n1", what="preemptor bound after the victim left")
    # upstream's metrics of the background work (1.32+)
    wait_for(lambda: replica.sample("scheduler_preemption_goroutines_execution_total", result="success") == 1,
             what="the goroutine counted")
    held_for = replica.sample("scheduler_preemption_goroutines_duration_seconds_sum", result="success")
    assert held_for is not None and held_for > 0
    assert replica.sample("scheduler_preemption_goroutines_duration_seconds_bucket", result="success", le="+Inf") == 1


def test_without_async_preemption_the_cycle_waits_for_the_victims(
        fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    """The same API server as above, by default (v1.28): the scheduling thread waits for the
    victim's DELETE, so the other pod is bound only after it was answered."""
    fake.create(make_priority_class("low", 100))
    fake.create(make_priority_class("high", 1000))
    fake.create(make_node("n1", cpu="4"))
    fake.create(make_node("n2", cpu="1"))
    fake.create(pod("victim", cpu="3", priority_class="low", node="n1", grace=30))
    order: list[str] = []

    def hold_a_little(server: FakeApiServer) -> None:
        time.sleep(0.5)  # the other pod is created meanwhile
        order.append("victim deleted")

    fake.inject(Fault(method="DELETE", path="/pods/victim$", status=None, action=hold_a_little))
    replicas("a")
    fake.create(pod("preemptor", cpu="2", priority_class="high"))
    wait_for(lambda: fake.requests_matching("PATCH", "/pods/victim/status$"), what="the victim marked")
    fake.create(pod("other", cpu="500m"))
    wait_for(lambda: node_of(fake, "other") == "n2", what="the other pod bound")
    order.append("other bound")
    assert order == ["victim deleted", "other bound"]


@pytest.mark.parametrize("gates", [{}, {ASYNC_PREEMPTION: True}], ids=["sync", "async"])
def test_every_preemptor_of_a_full_cluster_is_bound(
        fake: FakeApiServer, replicas: Callable[..., Replica], gates: dict[str, bool]) -> None:
    """PreemptionBasic in small: every node full of three low-priority pods, one high-priority pod per
    node; the victims go at once (no grace period). Every preemptor ends up bound, none twice
    nominated to a node whose victims another took, with or without asynchronous preemption (whose
    API calls are made on worker threads while the scheduling thread handles the watch)."""
    fake.create(make_priority_class("low", 100))
    fake.create(make_priority_class("high", 1000))
    nodes = 40
    for i in range(nodes):
        fake.create(make_node(f"n{i}", cpu="4"))
        for k in range(3):
            fake.create(pod(f"low-{i}-{k}", cpu="1200m", priority_class="low", node=f"n{i}", grace=0))
    replicas("a", feature_gates=gates)
    for i in range(nodes):
        fake.create(pod(f"high-{i}", cpu="3", priority_class="high"))
    wait_for(lambda: all(node_of(fake, f"high-{i}") for i in range(nodes)), what="every preemptor bound")
    assert len({node_of(fake, f"high-{i}") for i in range(nodes)}) == nodes


def test_clearing_a_nomination_sends_null(fake: FakeApiServer, kubeconfig: str) -> None:
    from kubesched.cluster.kube import ClientOptions, KubeCluster, load_api_client

    fake.create(make_node("n1"))
    created = fake.create(pod("p"))
    fake.patch("Pod", "default", "p", {"status": {"nominatedNodeName": "n1"}})
    cluster = KubeCluster(load_api_client(kubeconfig), profiles=[SCHEDULER], client_options=ClientOptions(qps=0))
    cluster.patch_pod_status(created, {"nominatedNodeName": None})
    current = fake.get("Pod", "default", "p")
    assert current is not None and "nominatedNodeName" not in current["status"]
    assert fake.requests_matching("PATCH", "/pods/p/status$")[-1].body == {"status": {"nominatedNodeName": None}}


def test_informers_cache_every_kind_and_nrt_when_served(tmp_path: Any) -> None:
    from conftest import Replica

    fake = FakeApiServer(nrt=True).start()
    try:
        fake.create(make_pdb("pdb", None, namespace="default", min_available=1))
        fake.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc", "namespace": "default"},
                     "spec": {"selector": {"app": "x"}}})
        fake.create({"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
                     "metadata": {"name": "n1"}, "zones": []})
        replica = Replica(fake, fake.kubeconfig(tmp_path)).start()
        try:
            cluster = replica.cluster
            assert [o["metadata"]["name"] for o in cluster.list("PodDisruptionBudget")] == ["pdb"]
            assert cluster.get("Service", "default", "svc") is not None
            assert cluster.get("Namespace", "", "kube-system") is not None
            nrt = cluster.get("NodeResourceTopology", "", "n1")
            assert nrt is not None and nrt["kind"] == "NodeResourceTopology"
            assert "managedFields" not in nrt["metadata"]
        finally:
            replica.stop()
    finally:
        fake.stop()


def test_event_repeats_become_a_series(fake: FakeApiServer, kubeconfig: str) -> None:
    from kubesched.cluster.kube import ClientOptions, KubeCluster, load_api_client

    created = fake.create(pod("p"))
    cluster = KubeCluster(load_api_client(kubeconfig), profiles=[SCHEDULER], client_options=ClientOptions(qps=0))
    cluster.events.start()
    try:
        for _ in range(3):
            cluster.record_event(created, type="Warning", reason="FailedScheduling", action="Scheduling",
                                 note="0/1 nodes are available: 1 Insufficient cpu.")
        assert cluster.events.flush(5.0)
    finally:
        cluster.events.stop()
    events = fake.list("Event")
    assert len(events) == 1
    assert events[0]["series"]["count"] == 2  # patched on the first repeat, then every 30 s at most
    assert len(fake.requests_matching("PATCH", "/events/")) == 1


def test_a_preemptor_s_victims_are_all_preempted(fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    """Several victims on one node: each is marked DisruptionTarget, deleted once and gets its
    Preempted event (the calls for them go out at the same time, as upstream's prepareCandidate)."""
    fake.create(make_priority_class("low", 100))
    fake.create(make_priority_class("high", 1000))
    fake.create(make_node("n1", cpu="4"))
    for i in range(3):
        fake.create(pod(f"victim-{i}", cpu="1", priority_class="low", node="n1", grace=30))
    replicas("a")
    fake.create(pod("preemptor", cpu="4", priority_class="high"))

    def all_terminating() -> bool:
        found = [fake.get("Pod", "default", f"victim-{i}") for i in range(3)]
        return all(v is not None and v["metadata"].get("deletionTimestamp") for v in found)

    wait_for(all_terminating, what="every victim terminating")
    for i in range(3):
        victim = fake.get("Pod", "default", f"victim-{i}")
        assert victim is not None
        assert [c["reason"] for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget"] == [
            "PreemptionByScheduler"]
        assert len(fake.requests_matching("DELETE", f"/pods/victim-{i}$")) == 1
        wait_for(lambda i=i: events_for(fake, f"victim-{i}", "Preempted"), what="Preempted event")


def test_the_next_pod_is_scheduled_while_a_failed_pods_status_patch_is_under_way(
        fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    from fakefaults import Fault

    fake.create(make_node("n1", cpu="1"))
    # the API server takes its time answering the unschedulable pod's status patch
    slow = fake.inject(Fault(method="PATCH", path="/pods/too-big/status$", status=None, delay=5.0))
    fake.create(pod("too-big", cpu="2"))
    replicas("a")
    wait_for(lambda: slow.hits == 1, what="the unschedulable pod's status patch under way")
    fake.create(pod("fits", cpu="100m"))
    wait_for(lambda: node_of(fake, "fits") == "n1", what="fits bound")
    binding = fake.requests_matching("POST", "/pods/fits/binding$")[0]
    # the patch's request is logged when it is answered: the next pod was bound before that
    wait_for(lambda: fake.requests_matching("PATCH", "/pods/too-big/status$"), what="status patch answered")
    patch = fake.requests_matching("PATCH", "/pods/too-big/status$")[0]
    assert binding.time < patch.time
    current = fake.get("Pod", "default", "too-big")
    assert current is not None
    scheduled = [c for c in current["status"]["conditions"] if c["type"] == "PodScheduled"][0]
    assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")


def test_a_pods_binding_waits_for_its_earlier_status_patch(fake: FakeApiServer,
                                                            replicas: Callable[..., Replica]) -> None:
    from fakefaults import Fault

    fake.create(make_node("small", cpu="1"))
    slow = fake.inject(Fault(method="PATCH", path="/pods/later/status$", status=None, delay=3.0))
    fake.create(pod("later", cpu="2"))
    replicas("a")
    wait_for(lambda: slow.hits == 1, what="the unschedulable pod's status patch under way")
    fake.create(make_node("big", cpu="4"))  # the pod fits now, while its patch is still unanswered
    wait_for(lambda: node_of(fake, "later") == "big", what="later bound")
    patch = fake.requests_matching("PATCH", "/pods/later/status$")[0]
    binding = fake.requests_matching("POST", "/pods/later/binding$")[0]
    assert patch.time <= binding.time
    current = fake.get("Pod", "default", "later")
    assert current is not None
    scheduled = [c for c in current["status"]["conditions"] if c["type"] == "PodScheduled"][0]
    assert scheduled["status"] == "True"
