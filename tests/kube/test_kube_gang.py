"""`kubesched run` with Coscheduling against an API server that serves PodGroups: members wait at
Permit (on the scheduling thread's timers), the last allows them all, and a lone member times out
with upstream's message."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fakeapi import FakeApiServer

from conftest import SCHEDULER, Replica, node_of, pod, wait_for
from kubesched.testkit.builders import make_node

pytestmark = pytest.mark.timeout(60)

GROUP = "scheduling.x-k8s.io/pod-group"
CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
          "profiles": [{"schedulerName": SCHEDULER,
                        "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                                    "queueSort": {"enabled": [{"name": "Coscheduling"}],
                                                  "disabled": [{"name": "*"}]}}}]}


def member(name: str, group: str) -> dict:
    obj = pod(name)
    obj["metadata"]["labels"] = {GROUP: group}
    return obj


def group(name: str, min_member: int, timeout: int) -> dict:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": min_member, "scheduleTimeoutSeconds": timeout}}


def scheduled_condition(fake: FakeApiServer, name: str) -> str:
    current = fake.get("Pod", "default", name) or {}
    return next((c.get("message") or "" for c in (current.get("status") or {}).get("conditions") or ()
                 if c.get("type") == "PodScheduled"), "")


def test_a_gang_binds_together_and_a_lone_member_times_out(fake: FakeApiServer,
                                                         replicas: Callable[..., Replica]) -> None:
    fake.create(make_node("n1", cpu="4"))
    fake.create(group("pair", 2, 600))
    fake.create(group("trio", 3, 2))
    replica = replicas("a", config=CONFIG)
    wait_for(lambda: replica.cluster.get("PodGroup", "default", "trio") is not None)
    fake.create(member("p0", "pair"))
    fake.create(member("t0", "trio"))
    fake.create(member("t1", "trio"))
    fake.create({**member("t2", "trio"), "spec": {**member("t2", "trio")["spec"],
                                                  "schedulingGates": [{"name": "example.com/hold"}]}})
    wait_for(lambda: "rejected due to timeout after waiting 2s at plugin Coscheduling" in scheduled_condition(fake, "t0"),
             timeout=15, what="t0 timed out at Permit")
    assert node_of(fake, "t0") is None and node_of(fake, "t1") is None
    assert node_of(fake, "p0") is None  # still waiting for its partner (600 s)
    fake.create(member("p1", "pair"))
    wait_for(lambda: node_of(fake, "p0") == "n1" and node_of(fake, "p1") == "n1", timeout=15,
             what="the pair bound together")
