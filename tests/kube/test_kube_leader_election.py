"""Leader election on a coordination.k8s.io/v1 Lease: only the leader schedules, hand-over when the
leader stops renewing, release on clean shutdown, and never two replicas scheduling at once."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from fakeapi import FakeApiServer, Fault, Request

from conftest import FAST_LEASE, Replica, node_of, pod, wait_for
from kubesched.cli.run import resolve_settings
from kubesched.cluster.kube import (
    ClientOptions,
    LeaderElectionConfig,
    LeaderElector,
    Transport,
    load_api_client,
    wall_clock,
)
from kubesched.cluster.kube.events import micro_time
from kubesched.serve.runner import LOST_LEASE, STOPPED
from kubesched.testkit.builders import make_node

pytestmark = pytest.mark.timeout(60)


def lease(fake: FakeApiServer) -> dict[str, object]:
    obj = fake.get("Lease", "kube-system", "kubesched")
    assert obj is not None
    spec: dict[str, object] = obj["spec"]
    return spec


def binds_by(fake: FakeApiServer, identity: str) -> list[Request]:
    return [r for r in fake.requests_matching("POST", "/binding$") if r.agent == f"kubesched/{identity}"]


def lease_writes_won(fake: FakeApiServer, identity: str) -> list[Request]:
    return [r for r in fake.requests if "/leases" in r.path and r.method in ("POST", "PUT")
            and r.status in (200, 201) and r.agent == f"kubesched/{identity} leader-election"]


def test_only_the_leader_schedules_and_hands_over_when_it_stops_renewing(
        fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    fake.create(make_node("n1", cpu="64"))
    a = replicas("a", leader_election=True)
    wait_for(lambda: a.elector is not None and a.elector.is_leader(), what="a leads")
    b = replicas("b", leader_election=True)
    assert b.elector is not None and not b.elector.is_leader()
    for i in range(5):
        fake.create(pod(f"first-{i}"))
    wait_for(lambda: all(node_of(fake, f"first-{i}") for i in range(5)), what="first pods bound")
    assert len(binds_by(fake, "a")) == 5 and binds_by(fake, "b") == []
    assert lease(fake)["holderIdentity"] == "a" and lease(fake)["leaseDurationSeconds"] == 2

    # a can no longer renew (its lease writes fail); it must stop, and b take over after expiry
    fake.inject(Fault(method="PUT", path="/leases/", agent="kubesched/a leader-election", status=500, times=-1))
    wait_for(lambda: a.result == LOST_LEASE, what="a gives up")
    wait_for(lambda: b.elector is not None and b.elector.is_leader(), what="b leads")
    assert lease(fake)["holderIdentity"] == "b" and lease(fake)["leaseTransitions"] == 1
    for i in range(5):
        fake.create(pod(f"second-{i}"))
    wait_for(lambda: all(node_of(fake, f"second-{i}") for i in range(5)), what="second pods bound")
    assert len(binds_by(fake, "a")) == 5 and len(binds_by(fake, "b")) == 5
    b_acquired = lease_writes_won(fake, "b")[0].time
    assert max(r.time for r in binds_by(fake, "a")) < b_acquired
    assert all(r.time > b_acquired for r in binds_by(fake, "b"))


def test_two_replicas_never_both_schedule_and_release_hands_over(
        fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    fake.create(make_node("n1", cpu="64"))
    a = replicas("a", leader_election=True, start=False)
    b = replicas("b", leader_election=True, start=False)
    a.start(wait_ready=False)
    b.start(wait_ready=False)
    wait_for(lambda: a.runner.ready() and b.runner.ready(), what="both ready")
    for i in range(30):
        fake.create(pod(f"p{i}"))
    wait_for(lambda: all(node_of(fake, f"p{i}") for i in range(30)), what="all bound")
    leader, standby = (a, b) if binds_by(fake, "a") else (b, a)
    assert len(binds_by(fake, leader.identity)) == 30 and binds_by(fake, standby.identity) == []
    assert lease(fake)["holderIdentity"] == leader.identity

    assert leader.stop() == STOPPED  # clean shutdown releases the lease ...
    released = lease_writes_won(fake, leader.identity)[-1]
    assert released.body["spec"]["holderIdentity"] == ""
    # ... so the standby takes over at its next try, well before the 1.6 s lease would expire
    wait_for(lambda: standby.elector is not None and standby.elector.is_leader(), timeout=1.2, what="hand-over")
    for i in range(10):
        fake.create(pod(f"q{i}"))
    wait_for(lambda: all(node_of(fake, f"q{i}") for i in range(10)), what="bound by the new leader")
    assert len(binds_by(fake, standby.identity)) == 10
    assert max(r.time for r in binds_by(fake, leader.identity)) < min(
        r.time for r in binds_by(fake, standby.identity))


def test_clean_shutdown_releases_the_lease(fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    a = replicas("a", leader_election=True)
    wait_for(lambda: a.elector is not None and a.elector.is_leader(), what="a leads")
    assert a.stop() == STOPPED
    assert lease(fake)["holderIdentity"] == ""


def test_default_lease_is_kubesched_s_own_with_upstream_s_timings(fake: FakeApiServer, kubeconfig: str) -> None:
    """kube-scheduler v1.28 elects its leader on the Lease ``kube-system/kube-scheduler`` with
    leaseDuration 15 s, renewDeadline 10 s and retryPeriod 2 s (the defaults of
    ``staging/src/k8s.io/component-base/config/v1alpha1/defaults.go`` applied by
    ``pkg/scheduler/apis/config/v1/defaults.go``). kubesched keeps the timings but not the Lease,
    which is the default scheduler's: it runs beside it, and each scheduler needs a lock of its own
    (the "Configure Multiple Schedulers" task), so its default is ``kube-system/kubesched``. The
    configuration's ``leaderElection.resourceName`` wins over that default, ``--lease-name`` over both."""
    settings = resolve_settings(None, None, None, None, None, None, None)  # `kubesched run` without flags
    assert settings.leader_elect
    assert (settings.lease_namespace, settings.lease_name) == ("kube-system", "kubesched")
    assert (settings.lease_duration, settings.renew_deadline, settings.retry_period) == (15.0, 10.0, 2.0)
    configured = {"leaderElection": {"resourceName": "batch-scheduler", "resourceNamespace": "scheduling"}}
    assert resolve_settings(configured, None, None, None, None, None, None).lease_name == "batch-scheduler"
    assert resolve_settings(configured, None, None, None, None, "mine", None).lease_name == "mine"
    config = LeaderElectionConfig(identity="a")
    assert (config.lease_namespace, config.lease_name) == ("kube-system", "kubesched")
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (15.0, 10.0, 2.0)
    transport = Transport(load_api_client(kubeconfig), ClientOptions(qps=0, max_attempts=1, request_timeout=0.5),
                          user_agent="kubesched/a leader-election")
    elector = LeaderElector(transport, config, wall_clock)
    elector.start()
    try:
        wait_for(elector.started_leading.is_set, what="a leads")
        obj = fake.get("Lease", "kube-system", "kubesched")
        assert obj is not None
        assert (obj["apiVersion"], obj["kind"]) == ("coordination.k8s.io/v1", "Lease")
        assert (obj["metadata"]["namespace"], obj["metadata"]["name"]) == ("kube-system", "kubesched")
        assert obj["spec"]["holderIdentity"] == "a"
        assert obj["spec"]["leaseDurationSeconds"] == 15
        assert obj["spec"]["leaseTransitions"] == 0
        assert elector.is_leader()
    finally:
        elector.stop()
    assert lease(fake)["holderIdentity"] == ""  # released on a clean stop


def default_scheduler_lease(fake: FakeApiServer, holder: str) -> None:
    """The Lease of a default kube-scheduler that is up: renewed a moment ago, for 15 s."""
    now = micro_time(wall_clock())
    fake.create({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
                 "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "acquireTime": now,
                          "renewTime": now, "leaseTransitions": 0}})


def test_a_lease_another_holder_keeps_is_explained_in_the_log_once_then_at_a_low_rate(
        fake: FakeApiServer, replicas: Callable[..., Replica], caplog: pytest.LogCaptureFixture) -> None:
    """kubesched told to use the default scheduler's Lease waits for it for ever: after a short while
    it says who holds it and what to change, then repeats that only now and then."""
    holder = "control-plane-1_0c6b3f0e-8d1c-4b4e-9d43-6c1f0b4f8a27"
    default_scheduler_lease(fake, holder)
    fake.create(make_node("n1"))
    caplog.set_level(logging.INFO, logger="kubesched.kube.leaderelection")
    a = replicas("a", leader_election=True, lease={**FAST_LEASE, "lease_name": "kube-scheduler",
                                                   "report_holder_after": 0.6, "report_holder_every": 1.5})

    def reports() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == "kubesched.kube.leaderelection" and r.levelno == logging.WARNING
                and "has been held by" in r.getMessage()]

    first = wait_for(lambda: reports(), what="the holder reported")[0]
    assert first.getMessage().startswith(f"lease kube-system/kube-scheduler has been held by {holder} for ")
    assert "if that is the default kube-scheduler, kubesched's lease name must differ from its (--lease-name" \
        in first.getMessage()
    assert (first.lease, first.holder) == ("kube-system/kube-scheduler", holder)
    assert first.waitedSeconds >= 0.6 - 0.05
    second = wait_for(lambda: reports()[1:], what="the holder reported again")[0]
    assert second.created - first.created >= 1.5 - 0.05
    assert len(reports()) == 2
    assert a.elector is not None and not a.elector.is_leader()
    fake.create(pod("p"))
    assert node_of(fake, "p") is None and binds_by(fake, "a") == []


def test_stop_finishes_the_binding_in_flight_then_releases(
        fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    fake.create(make_node("n1"))
    a = replicas("a", leader_election=True)
    wait_for(lambda: a.elector is not None and a.elector.is_leader(), what="a leads")
    slow = fake.inject(Fault(method="POST", path="/pods/p/binding$", status=None, delay=0.8))
    fake.create(pod("p"))
    fake.create(pod("q"))
    wait_for(lambda: slow.hits == 1, what="binding in flight")
    # bindings run in the background (as upstream's binding goroutines): q's cycle went on while
    # p's binding was slow
    wait_for(lambda: fake.requests_matching("POST", "/pods/q/binding$"), what="q's binding sent")
    assert a.stop() == STOPPED  # like SIGTERM
    assert node_of(fake, "p") == "n1" and node_of(fake, "q") == "n1"  # the bindings under way finished
    bind = fake.requests_matching("POST", "/pods/p/binding$")[0]
    release = lease_writes_won(fake, "a")[-1]
    # ... before the lease was released (the slow binding answered 0.8 s after it was sent)
    assert release.body["spec"]["holderIdentity"] == "" and release.time > bind.time
