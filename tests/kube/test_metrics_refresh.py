"""The metrics of ``kubesched run`` are built on the scheduling thread when a scrape asks for them:
a scrape sees what the scheduler has done, and a scheduler nobody scrapes builds none."""

from __future__ import annotations

from collections.abc import Callable

from fakeapi import FakeApiServer

from conftest import Replica, node_of, pod, wait_for
from kubesched.serve.runner import RunnerOptions
from kubesched.testkit.builders import make_node


def test_a_scrape_sees_the_cycles_before_it_and_none_is_built_unasked(
        fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    fake.create(make_node("n1", cpu="4"))
    # metrics older than an hour would be served as they are: every scrape here builds fresh ones
    replica = replicas("a", runner=RunnerOptions(idle_wait=0.05, metrics_period=0.0, sync_timeout=10.0))
    for i in range(3):
        fake.create(pod(f"p{i}"))
    wait_for(lambda: all(node_of(fake, f"p{i}") == "n1" for i in range(3)), what="three pods bound")
    assert replica.runner.exporter.builds == 1  # the one made before the replica was ready: nobody scraped since
    assert replica.sample("scheduler_schedule_attempts_total", profile="kubesched", result="scheduled") == 3
    assert replica.runner.exporter.builds == 2


def test_metrics_younger_than_the_period_are_served_as_they_are(
        fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    replica = replicas("a", runner=RunnerOptions(idle_wait=0.05, metrics_period=3600.0, sync_timeout=10.0))
    for _ in range(3):
        assert "scheduler_pending_pods" in replica.runner.exporter.text
    assert replica.runner.exporter.builds == 1  # the one made before the replica was ready


def test_a_stopped_runner_serves_its_last_metrics_without_waiting(
        fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    fake.create(make_node("n1", cpu="4"))
    replica = replicas("a", runner=RunnerOptions(idle_wait=0.05, metrics_period=0.0, sync_timeout=10.0))
    fake.create(pod("p"))
    wait_for(lambda: node_of(fake, "p") == "n1", what="the pod bound")
    replica.stop()
    builds = replica.runner.exporter.builds  # the loop's last one, on the way out
    assert replica.sample("scheduler_schedule_attempts_total", profile="kubesched", result="scheduled") == 1
    assert replica.runner.exporter.builds == builds
