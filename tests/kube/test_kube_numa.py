"""`kubesched run` with NodeResourceTopologyMatch against the fake API server serving the
NodeResourceTopology CRD: placements follow the objects as an exporter rewrites them."""

from __future__ import annotations

from typing import Any

import pytest
from fakeapi import FakeApiServer

from conftest import SCHEDULER, Replica, node_of, wait_for
from kubesched.testkit.builders import make_container, make_node, make_nrt, make_nrt_zone, make_pod

pytestmark = pytest.mark.timeout(60)

CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
          "profiles": [{"schedulerName": SCHEDULER,
                        "plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}}}]}


def zones(free_cpus: int) -> list[dict[str, Any]]:
    """Two zones of 8 CPUs and 16Gi with ``free_cpus`` available in each."""
    return [make_nrt_zone(i, {"cpu": str(free_cpus), "memory": "16Gi"}, {"cpu": "8", "memory": "16Gi"})
            for i in range(2)]


def guaranteed(name: str, cpus: int) -> dict[str, Any]:
    limits = {"cpu": str(cpus), "memory": "1Gi"}
    return make_pod(name, containers=[make_container("main", resources={"limits": limits, "requests": limits})],
                    scheduler_name=SCHEDULER)


@pytest.fixture
def nrt_fake() -> Any:
    server = FakeApiServer(nrt=True).start()
    yield server
    server.stop()


def available_cpu(replica: Replica, node: str) -> str | None:
    """The first zone's available CPUs in the replica's informer cache."""
    obj = replica.cluster.get("NodeResourceTopology", "", node)
    return None if obj is None else str(obj["zones"][0]["resources"][0]["available"])


def test_placements_follow_rewritten_topology_objects(nrt_fake: FakeApiServer, tmp_path: Any) -> None:
    fake = nrt_fake
    for name in ("n1", "n2"):
        fake.create(make_node(name, cpu="16", memory="64Gi"))
    fake.create(make_nrt("n1", zones(1)))  # no zone of n1 holds 4 CPUs
    fake.create(make_nrt("n2", zones(8)))
    replica = Replica(fake, fake.kubeconfig(tmp_path), config=CONFIG).start()
    try:
        fake.create(guaranteed("first", 4))
        wait_for(lambda: node_of(fake, "first") is not None, what="first bound")
        assert node_of(fake, "first") == "n2"
        # the exporter rewrites both objects: n2's zones are taken, n1's freed
        fake.patch("NodeResourceTopology", None, "n2", {"zones": zones(0)})
        fake.patch("NodeResourceTopology", None, "n1", {"zones": zones(8)})
        wait_for(lambda: (available_cpu(replica, "n1"), available_cpu(replica, "n2")) == ("8", "0"),
                 what="the rewritten objects seen")
        fake.create(guaranteed("second", 4))
        wait_for(lambda: node_of(fake, "second") is not None, what="second bound")
        assert node_of(fake, "second") == "n1"
        # a pod no zone anywhere holds stays pending, with the plugin's reason
        fake.create(guaranteed("too-big", 9))
        wait_for(lambda: any(e["regarding"]["name"] == "too-big" and e["reason"] == "FailedScheduling"
                             for e in fake.list("Event")), what="too-big refused")
        assert node_of(fake, "too-big") is None
        note = next(e["note"] for e in fake.list("Event") if e["regarding"]["name"] == "too-big")
        assert note.startswith("0/2 nodes are available: 2 cannot align container.")
    finally:
        replica.stop()
