"""Events wait for the scheduling thread's own API calls (a preemption's victims): held while those
calls are under way, sent in order once they are answered, never held for longer than the bound."""

from __future__ import annotations

import threading
from typing import Any

from fakeapi import FakeApiServer

from conftest import SCHEDULER, pod, wait_for
from kubesched.cluster.kube import ClientOptions, KubeCluster, load_api_client
from kubesched.cluster.kube.foreground import Foreground


def _cluster(kubeconfig: str) -> KubeCluster:
    return KubeCluster(load_api_client(kubeconfig), profiles=[SCHEDULER], client_options=ClientOptions(qps=0))


def _notes(fake: FakeApiServer) -> list[str]:
    return sorted(e["note"] for e in fake.list("Event"))


def test_events_wait_for_the_scheduling_thread_s_calls_then_go_in_order(fake: FakeApiServer, kubeconfig: str) -> None:
    created = fake.create(pod("p"))
    cluster = _cluster(kubeconfig)
    cluster.foreground.max_hold = 600.0  # only the calls' end may release the events here
    cluster.events.start()
    try:
        with cluster.foreground.calls():
            for n in range(3):
                cluster.record_event(created, type="Normal", reason="Preempted", action="Preempting",
                                     note=f"event {n}")
            wait_for(lambda: cluster.foreground.holding == 1, what="the sender holding the first event")
            assert fake.list("Event") == []
        assert cluster.events.flush(30.0)
    finally:
        cluster.events.stop()
    assert _notes(fake) == ["event 0", "event 1", "event 2"]
    names = [e["metadata"]["name"] for e in fake.list("Event")]
    assert len(set(names)) == 3
    assert cluster.foreground.holds == 1 and cluster.foreground.holding == 0


def test_an_event_is_held_for_at_most_the_bound(fake: FakeApiServer, kubeconfig: str) -> None:
    created = fake.create(pod("p"))
    cluster = _cluster(kubeconfig)
    cluster.foreground.max_hold = 0.0
    cluster.events.start()
    try:
        with cluster.foreground.calls():  # calls that never end: the events go out all the same
            cluster.record_event(created, type="Normal", reason="Preempted", action="Preempting", note="held")
            assert cluster.events.flush(30.0)
            assert _notes(fake) == ["held"]
    finally:
        cluster.events.stop()


def test_only_the_scheduling_thread_s_call_all_holds_events(fake: FakeApiServer, kubeconfig: str) -> None:
    cluster = _cluster(kubeconfig)

    class Handler:
        def on_add(self, kind: str, obj: Any) -> None: ...
        def on_update(self, kind: str, old: Any, new: Any) -> None: ...
        def on_delete(self, kind: str, obj: Any) -> None: ...

    cluster.watch(Handler())  # this thread handles the watch's events: the scheduling thread
    try:
        assert cluster.call_all([lambda: cluster.foreground.busy, lambda: cluster.foreground.busy]) == [True, True]
        assert cluster.call_all([lambda: cluster.foreground.busy]) == [True]
        assert not cluster.foreground.busy
        elsewhere: list[list[bool]] = []
        other = threading.Thread(target=lambda: elsewhere.append(
            cluster.call_all([lambda: cluster.foreground.busy, lambda: cluster.foreground.busy])))
        other.start()
        other.join(30.0)
        assert elsewhere == [[False, False]]  # asynchronous preemption's calls: nobody waits on them
    finally:
        cluster.stop()


def test_calls_nest_and_release_the_waiters_at_the_end() -> None:
    foreground = Foreground(max_hold=600.0)
    with foreground.calls():
        with foreground.calls():
            assert foreground.busy
        assert foreground.busy
    assert not foreground.busy
    assert foreground.wait_idle()  # nothing under way: no hold
    assert foreground.holds == 0
