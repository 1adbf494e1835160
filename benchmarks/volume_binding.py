"""Pods with PersistentVolumeClaims (the embedded PersistentVolume controller and provisioners run):

- ``VolumeBindingLocal``: one local volume per node (``kubernetes.io/hostname`` node affinity,
  ``WaitForFirstConsumer`` class without provisioner); each measured pod has its own claim, so the
  scheduler matches volumes per node, reserves one and binds it in PreBind;
- ``VolumeProvisioning``: nodes in three zones, a ``WaitForFirstConsumer`` class whose provisioner
  pins new volumes to the chosen node's zone; each measured pod's claim is provisioned on the spot;
- ``VolumeBindingImmediate``: an ``Immediate`` class without provisioner; the measured pods and
  their claims come first, then as many volumes of assorted sizes (the order ``kubectl get
  pvc,pv`` lists them in): the PersistentVolume controller binds each waiting claim as volumes
  arrive, then the pods are scheduled.

Measured until every pod is bound (PreBind waits a simulated second for the binding to complete).
"""

from __future__ import annotations

import argparse
from typing import Any

from harness import Bench, Measurement

from kubesched.testkit.builders import make_node, make_pod, make_pv, make_pvc, make_storage_class, with_claims

ZONE = "topology.kubernetes.io/zone"


def _claimed_pods(prefix: str, count: int, storage_class: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(count):
        out.append(make_pvc(f"{prefix}-data-{i}", "10Gi", storage_class=storage_class, namespace="sched-1"))
        out.append(with_claims(make_pod(f"{prefix}-{i}", namespace="sched-1"), f"{prefix}-data-{i}"))
    return out


def run_local(nodes: int = 1000, measured: int = 1000) -> Measurement:
    bench = Bench(controllers=True)
    bench.create([make_storage_class("local", provisioner="kubernetes.io/no-provisioner")])
    bench.create(make_node(f"node-{i}", labels={ZONE: f"zone{i % 3}"}) for i in range(nodes))
    bench.create(make_pv(f"local-{i}", "100Gi", node=f"node-{i}") for i in range(nodes))
    bench.drain()
    return bench.measure(f"VolumeBindingLocal/{nodes}Nodes_{measured}Pods", _claimed_pods("pod", measured, "local"),
                         settle=3.0)


def run_provisioning(nodes: int = 1000, measured: int = 1000) -> Measurement:
    bench = Bench(cluster={"storage": {"provisioners": {"*": {"delay": "2s", "topologyKeys": [ZONE]}}}})
    bench.create([make_storage_class("zonal")])
    bench.create(make_node(f"node-{i}", labels={ZONE: f"zone{i % 3}"}) for i in range(nodes))
    bench.drain()
    return bench.measure(f"VolumeProvisioning/{nodes}Nodes_{measured}Pods", _claimed_pods("pod", measured, "zonal"),
                         settle=5.0)


def run_immediate(nodes: int = 1000, measured: int = 1000) -> Measurement:
    bench = Bench(controllers=True)
    bench.create([make_storage_class("manual", provisioner="kubernetes.io/no-provisioner", wait=False)])
    bench.create(make_node(f"node-{i}", labels={ZONE: f"zone{i % 3}"}) for i in range(nodes))
    bench.drain()
    volumes = [make_pv(f"pv-{i}", f"{10 + 10 * (i % 5)}Gi", storage_class="manual") for i in range(measured)]
    return bench.measure(f"VolumeBindingImmediate/{nodes}Nodes_{measured}Pods",
                         _claimed_pods("pod", measured, "manual") + volumes, settle=3.0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--measured", type=int, default=1000)
    a = parser.parse_args()
    print(run_local(a.nodes, a.measured).line(), flush=True)
    print(run_provisioning(a.nodes, a.measured).line(), flush=True)
    print(run_immediate(a.nodes, a.measured).line())
