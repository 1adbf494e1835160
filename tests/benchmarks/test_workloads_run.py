"""Every benchmark workload still runs and schedules all of its measured pods (at a tiny size: the
figures themselves are measured by ``benchmarks/run.py``, never by a test)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import big_cluster  # noqa: E402
import mixed  # noqa: E402
import node_affinity  # noqa: E402
import numa  # noqa: E402
import pod_affinity  # noqa: E402
import preemption_basic  # noqa: E402
import scheduling_basic  # noqa: E402
import topology_spreading  # noqa: E402
import volume_binding  # noqa: E402


@pytest.mark.parametrize("workload, expected", [
    (lambda: scheduling_basic.run(20, 10, 40), 40),
    (lambda: node_affinity.run(20, 10, 40), 40),
    (lambda: topology_spreading.run(20, 10, 40), 40),
    (lambda: topology_spreading.run_deployments(20, 10, 40), 40),
    (lambda: pod_affinity.run_anti_affinity(40, 10, 20), 20),  # one pod per node: 30 of 40 nodes used
    (lambda: pod_affinity.run_affinity(20, 10, 40), 40),
    (lambda: mixed.run(30, 10, 40), 40),
    (lambda: preemption_basic.run(10), 10),
    (lambda: preemption_basic.run(10, plugin="CrossNodePreemption"), 10),
    (lambda: preemption_basic.run(10, "affinity", plugin="AffinityAwarePreemption"), 10),
    (lambda: volume_binding.run_local(20, 20), 20),
    (lambda: volume_binding.run_provisioning(20, 40), 40),
    (lambda: volume_binding.run_immediate(20, 40), 40),
    (lambda: numa.run(10, 10, 40), 40),
    (lambda: numa.run(10, 10, 40, cache="onupdate"), 40),
    (lambda: big_cluster.run(20, 250)[0], 250),
], ids=["SchedulingBasic", "NodeAffinity", "TopologySpreading", "DeploymentPods", "PodAntiAffinity",
        "PodAffinity", "Mixed", "PreemptionBasic", "PreemptionBasic-CrossNodePreemption",
        "Preemption[affinity]-AffinityAwarePreemption", "VolumeBindingLocal", "VolumeProvisioning",
        "VolumeBindingImmediate", "NUMA", "NUMA-OnUpdate",
        "BigCluster"])
def test_the_workload_schedules_every_measured_pod(workload, expected) -> None:
    measurement = workload()
    assert measurement.pods == expected


def test_the_numa_benchmark_places_by_numa_zones() -> None:
    """Its nodes publish NodeResourceTopology objects and the profile filters by them: a pod no
    single zone can hold (20 of 2 x 16 CPUs) stays pending although the node has 32."""
    from harness import Bench

    from kubesched.testkit.builders import make_node, make_pod

    bench = Bench(cluster={"topology": numa.TOPOLOGY}, config=numa.PROFILE)
    bench.create(make_node(f"n{i}", cpu="32", memory="128Gi", labels={"pool": "numa"}) for i in range(2))
    resources = {"cpu": "20", "memory": "4Gi"}
    bench.create([make_pod("big", containers=[{"name": "app", "image": "img",
                                               "resources": {"requests": resources, "limits": resources}}]),
                  numa.guaranteed_pod("fits")])
    bench.drain()
    assert len(list(bench.cluster.api.iter("NodeResourceTopology"))) == 2
    assert bench.bound({"big"}) == 0 and bench.bound({"fits"}) == 1


def test_the_preemption_benchmark_runs_the_plugin_it_is_given() -> None:
    """--plugin: the profile preempts with the opt-in plugin, not DefaultPreemption; an unknown
    name is refused."""
    config = preemption_basic.plugin_config("CrossNodePreemption")
    assert config["profiles"][0]["plugins"]["multiPoint"] == {
        "enabled": [{"name": "CrossNodePreemption"}], "disabled": [{"name": "DefaultPreemption"}]}
    assert preemption_basic.run(10, plugin="CrossNodePreemption").name == \
        "PreemptionBasic/10Nodes_CrossNodePreemption"
    with pytest.raises(ValueError, match="unknown preemption plugin 'Nope'"):
        preemption_basic.plugin_config("Nope")


def test_the_real_cluster_benchmark_binds_every_pod() -> None:
    """benchmarks/kube_fakeapi.py: `kubesched run`'s path against the fake API server in its own process."""
    import kube_fakeapi

    assert kube_fakeapi.run(nodes=5, pods=30, qps=0, burst=0).pods == 30
