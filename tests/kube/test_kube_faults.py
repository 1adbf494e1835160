"""Issue 4, point 5: nothing is lost under faults. Each fault is injected into the fake API server
while a replica schedules, and the test shows every pod ends where it should, exactly once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from fakeapi import FakeApiServer, Fault

from conftest import SCHEDULER, Replica, node_of, pod, wait_for
from kubesched.cluster.kube import ClientOptions, KubeCluster, load_api_client
from kubesched.testkit.builders import make_node, make_priority_class

pytestmark = pytest.mark.timeout(60)


def successful_binds(fake: FakeApiServer, name: str) -> int:
    return sum(1 for r in fake.requests_matching("POST", f"/pods/{name}/binding$") if r.status == 201)


def settled(replica: Replica) -> bool:
    return all(v == 0 for v in replica.pending().values()) and bool(replica.pending())


def test_bind_500_is_retried_then_requeued_until_bound(fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    fake.create(make_node("n1"))
    replica = replicas("a")
    # 3 tries per bind call (FAST_CLIENT): the first call fails for good, the pod goes back to the
    # queue, and the next cycle's bind succeeds after one more 500
    fault = fake.inject(Fault(method="POST", path="/pods/p/binding$", status=500, times=4))
    fake.create(pod("p"))
    wait_for(lambda: node_of(fake, "p") == "n1", what="p bound")
    assert fault.hits == 4
    assert len(fake.requests_matching("POST", "/pods/p/binding$")) == 5
    assert successful_binds(fake, "p") == 1
    wait_for(lambda: 'result="error"} 1' in replica.metric("scheduler_schedule_attempts_total")
             and 'result="scheduled"} 1' in replica.metric("scheduler_schedule_attempts_total"))


def test_bind_answer_lost_after_the_write_counts_as_bound(fake: FakeApiServer,
                                                          replicas: Callable[..., Replica]) -> None:
    fake.create(make_node("n1"))
    replica = replicas("a")
    fake.inject(Fault(method="POST", path="/pods/p/binding$", status=503, after=True))
    fake.create(pod("p"))
    wait_for(lambda: 'result="scheduled"} 1' in replica.metric("scheduler_schedule_attempts_total"))
    binds = fake.requests_matching("POST", "/pods/p/binding$")
    assert [r.status for r in binds] == [503, 409]  # the retry finds the pod already bound to our node
    assert node_of(fake, "p") == "n1"
    assert 'result="error"' not in replica.metric("scheduler_schedule_attempts_total")


def test_connection_reset_on_bind_is_retried(fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    fake.create(make_node("n1"))
    replicas("a")
    fake.inject(Fault(method="POST", path="/pods/p/binding$", reset=True))
    fake.create(pod("p"))
    wait_for(lambda: node_of(fake, "p") == "n1", what="p bound")
    assert [r.status for r in fake.requests_matching("POST", "/pods/p/binding$")] == [0, 201]


def test_a_write_is_logged_before_anyone_can_see_it(fake: FakeApiServer, kubeconfig: str) -> None:
    """The fake's own contract, which the tests above rely on when they wait for a pod to be bound
    and then read the request log: the binding is in the log by the time the store (and so every
    watch and every reader) has the pod bound; its answer is filled in before the lock is let go."""
    logged_when_bound: list[int] = []

    class Observer:
        def on_add(self, kind: str, obj: dict[str, Any]) -> None:
            pass

        def on_update(self, kind: str, old: dict[str, Any], new: dict[str, Any]) -> None:
            if kind == "Pod" and new["spec"].get("nodeName") and not old["spec"].get("nodeName"):
                logged_when_bound.append(len(fake.requests_matching("POST", "/pods/p/binding$")))

        def on_delete(self, kind: str, obj: dict[str, Any]) -> None:
            pass

    fake.store.watch(Observer())
    fake.create(make_node("n1"))
    created = fake.create(pod("p"))
    cluster = KubeCluster(load_api_client(kubeconfig), profiles=[SCHEDULER], client_options=ClientOptions(qps=0))
    cluster.bind(created, "n1")
    assert logged_when_bound == [1]
    assert [r.status for r in fake.requests_matching("POST", "/pods/p/binding$")] == [201]


def test_429_retry_after_is_honoured(fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    fake.create(make_node("n1"))
    replicas("a")
    fake.inject(Fault(method="POST", path="/pods/p/binding$", status=429, retry_after=1))
    fake.create(pod("p"))
    wait_for(lambda: node_of(fake, "p") == "n1", what="p bound")
    first, second = fake.requests_matching("POST", "/pods/p/binding$")
    assert (first.status, second.status) == (429, 201)
    assert second.time - first.time >= 0.95


def test_dropped_watches_resume_without_losing_or_duplicating(fake: FakeApiServer,
                                                              replicas: Callable[..., Replica]) -> None:
    fake.create(make_node("n1", cpu="64"))
    replica = replicas("a")
    names: list[str] = []
    for batch in range(5):
        for i in range(8):
            names.append(f"p{batch}-{i}")
            fake.create(pod(names[-1]))
        wait_for(lambda: fake.open_watches("Pod") > 0, what="pod watch reopened")
        assert fake.drop_watches() > 0
        time.sleep(0.05)
    wait_for(lambda: all(node_of(fake, n) for n in names), what="all pods bound")
    for name in names:
        assert successful_binds(fake, name) == 1
    assert not [r for r in fake.requests_matching("POST", "/binding$") if r.status != 201]
    pods = replica.cluster.informers["Pod"]
    wait_for(lambda: pods.watches >= 6, what="pod watch reopened after every drop")
    assert pods.relists == 1  # resumed from the last resourceVersion every time, never relisted
    assert replica.cluster.cache.count("Pod") == len(fake.list("Pod"))
    wait_for(lambda: settled(replica), what="queues empty")
    wait_for(lambda: 'result="scheduled"} 40' in replica.metric("scheduler_schedule_attempts_total"))


@pytest.mark.parametrize("gone_as_http", [False, True], ids=["error-event", "http-410"])
def test_410_gone_relists_and_synthesises_deletes(fake: FakeApiServer, replicas: Callable[..., Replica],
                                                  gone_as_http: bool) -> None:
    fake.gone_as_http = gone_as_http
    for name in ("n1", "n2"):
        fake.create(make_node(name))
    fake.create(pod("doomed", scheduler_name="someone-else"))
    replica = replicas("a")
    nodes = replica.cluster.informers["Node"]
    assert nodes.relists == 1
    fake.pause_watches()  # the watches see nothing from here on ...
    fake.remove("Node", None, "n2")
    fake.create(make_node("n3"))
    fake.remove("Pod", "default", "doomed")
    if gone_as_http:  # ... and when they reconnect, their resourceVersion is gone
        fake.compact()
        fake.drop_watches()
    else:  # ... and are told in the stream that it is gone
        fake.expire_watches()
    fake.pause_watches(False)
    wait_for(lambda: nodes.relists >= 2, what="nodes relisted")
    wait_for(lambda: sorted(o["metadata"]["name"] for o in replica.cluster.list("Node")) == ["n1", "n3"])
    wait_for(lambda: replica.cluster.get("Pod", "default", "doomed") is None, what="synthesised pod delete")
    for i in range(6):
        fake.create(pod(f"after-{i}"))
    wait_for(lambda: all(node_of(fake, f"after-{i}") for i in range(6)), what="pods bound after relist")
    assert {node_of(fake, f"after-{i}") for i in range(6)} <= {"n1", "n3"}  # n2's delete reached the cache
    if gone_as_http:
        assert any(r.status == 410 for r in fake.requests_matching("GET", "/nodes$"))


def test_pod_deleted_while_being_scheduled_is_forgotten(fake: FakeApiServer,
                                                        replicas: Callable[..., Replica]) -> None:
    fake.create(make_node("n1"))
    replica = replicas("a")

    def delete_it(server: FakeApiServer) -> None:
        server.remove("Pod", "default", "p")

    fake.inject(Fault(method="POST", path="/pods/p/binding$", status=None, action=delete_it))
    fake.create(pod("p"))
    fake.create(pod("q"))
    wait_for(lambda: node_of(fake, "q") == "n1", what="q bound")
    wait_for(lambda: fake.requests_matching("POST", "/pods/p/binding$"), what="p's bind tried")
    time.sleep(1.5)  # longer than the pod's backoff: a requeued pod would be tried again by now
    assert [r.status for r in fake.requests_matching("POST", "/pods/p/binding$")] == [404]
    wait_for(lambda: settled(replica), what="queues empty")
    assert replica.cluster.get("Pod", "default", "p") is None


def test_bind_conflict_is_not_retried_forever(fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    fake.create(make_node("n1"))
    replica = replicas("a")

    def someone_else_binds(server: FakeApiServer) -> None:
        server.bind_directly("default", "p", "elsewhere")

    fake.inject(Fault(method="POST", path="/pods/p/binding$", status=None, action=someone_else_binds))
    fake.create(pod("p"))
    wait_for(lambda: fake.requests_matching("POST", "/pods/p/binding$"), what="p's bind tried")
    time.sleep(2.5)  # two backoff flushes: nothing more happens
    assert [r.status for r in fake.requests_matching("POST", "/pods/p/binding$")] == [409]
    assert node_of(fake, "p") == "elsewhere"
    wait_for(lambda: settled(replica), what="queues empty")


def test_list_and_watch_failures_back_off_and_recover(fake: FakeApiServer,
                                                      replicas: Callable[..., Replica]) -> None:
    fake.create(make_node("n1"))
    fake.inject(Fault(method="GET", path="/api/v1/pods$", status=500, times=4))
    replica = replicas("a")  # ready only once the pod list finally succeeded
    fake.create(pod("p"))
    wait_for(lambda: node_of(fake, "p") == "n1", what="p bound")
    assert replica.cluster.informers["Pod"].relists == 1


def test_failed_victim_delete_sends_the_preemptor_back_to_try_again(
        fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:

    fake.create(make_priority_class("low", 100))
    fake.create(make_priority_class("high", 1000))
    fake.create(make_node("n1", cpu="4"))
    fake.create(pod("victim", cpu="3", priority_class="low", node="n1"))
    fake.termination_delay = 0.2  # the kubelet finishes terminating victims quickly
    replicas("a")
    failing = fake.inject(Fault(method="DELETE", path="/pods/victim$", status=500, times=3))  # one call's tries
    fake.create(pod("preemptor", cpu="2", priority_class="high"))
    wait_for(lambda: node_of(fake, "preemptor") == "n1", timeout=20, what="preemptor bound")
    assert failing.hits == 3
    assert [r.status for r in fake.requests_matching("DELETE", "/pods/victim$")] == [500, 500, 500, 200]
    assert fake.get("Pod", "default", "victim") is None
