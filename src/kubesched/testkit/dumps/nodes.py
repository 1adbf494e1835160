"""The nodes of a dump: :meth:`NodeBuilders.node` makes a Ready node as the kubelet registers it
(well-known labels, capacity and allocatable, addresses, a pod CIDR of its own),
:meth:`NodeBuilders.eks_nodegroup` the nodes of an EKS managed node group, named and labelled as EKS
does. Each node's network then hands out the IPs of the pods placed on it.
"""

from __future__ import annotations

import hashlib
import ipaddress

from kubesched.k8s.objects import Obj
from kubesched.testkit.dumps.metadata import DumpBase, name_hash, object_uid, timestamp


class NodeBuilders(DumpBase):
    """The node builders of :class:`~kubesched.testkit.dumps.cluster.ClusterDump`."""

    def node(self, name: str, cpu: str = "4", memory: str = "16Gi", zone: str = "zone-a", *,
             unschedulable: bool = False, taints: list[Obj] | None = None, instance_type: str = "e2-standard-4",
             region: str = "region-1", labels: dict[str, str] | None = None, address: str | None = None,
             provider_id: str | None = None, max_pods: int = 110, extended: dict[str, str] | None = None) -> Obj:
        """A Ready node. ``labels``: more labels (a node pool's); ``extended``: extended resources it
        has (``{"nvidia.com/gpu": "4"}``); ``address``: its InternalIP (default: one of its own)."""
        index = len(self.nodes)
        all_labels = {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": instance_type,
                      "beta.kubernetes.io/os": "linux", "failure-domain.beta.kubernetes.io/region": region,
                      "failure-domain.beta.kubernetes.io/zone": zone, "kubernetes.io/arch": "amd64",
                      "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                      "node.kubernetes.io/instance-type": instance_type, "topology.kubernetes.io/region": region,
                      "topology.kubernetes.io/zone": zone, **(labels or {})}
        meta = self._meta(name, minutes_before=20000, labels=dict(sorted(all_labels.items())), manager="kubelet",
                          kind="Node")
        meta["annotations"] = {"node.alpha.kubernetes.io/ttl": "0",
                               "volumes.kubernetes.io/controller-managed-attach-detach": "true"}
        address = address or str(ipaddress.IPv4Address(0x0A000000 + 0x100 + index))
        cidr = ipaddress.IPv4Network((0x0A400000 + (index << 8), 24))
        self._network[name] = [address, int(cidr.network_address), 0]
        spec: Obj = {"podCIDR": str(cidr), "podCIDRs": [str(cidr)],
                     "providerID": provider_id or f"gce://p/{zone}/{name}"}
        all_taints = list(taints or [])
        if unschedulable:
            spec["unschedulable"] = True
            all_taints.append({"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable",
                               "timeAdded": timestamp(30)})
        if all_taints:
            spec["taints"] = all_taints
        ready = {"lastHeartbeatTime": timestamp(1), "lastTransitionTime": timestamp(20000), "message": "kubelet is posting ready status",
                 "reason": "KubeletReady", "status": "True", "type": "Ready"}
        resources = {"cpu": cpu, "ephemeral-storage": "47060071478", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
                     "memory": memory, "pods": str(max_pods), **(extended or {})}
        node = {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": {
            "addresses": [{"address": address, "type": "InternalIP"}, {"address": name, "type": "Hostname"}],
            "allocatable": dict(sorted(resources.items())),
            "capacity": dict(sorted({**resources, "ephemeral-storage": "98831908Ki"}.items())),
            "conditions": [ready],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": [{"names": ["registry.k8s.io/pause@sha256:3ec98b8452dc8ae265a6917dfb81587ac78849e520d5dbba6de524851d20eca6",
                                  "registry.k8s.io/pause:3.9"], "sizeBytes": 321520}],
            "nodeInfo": {"architecture": "amd64", "containerRuntimeVersion": "containerd://1.7.2",
                         "kernelVersion": "6.1.0", "kubeProxyVersion": "v1.28.7", "kubeletVersion": "v1.28.7",
                         "machineID": name_hash(name, "machine") * 3, "operatingSystem": "linux",
                         "osImage": "Debian GNU/Linux 12", "bootID": object_uid("boot", name),
                         "systemUUID": object_uid("system", name)}}}
        self.nodes.append(node)
        return node

    def eks_nodegroup(self, group: str, count: int, *, instance_type: str = "m6i.xlarge", cpu: str = "3920m",
                      memory: str = "14162Mi", region: str = "us-west-2", max_pods: int = 58,
                      taints: list[Obj] | None = None, extended: dict[str, str] | None = None,
                      unschedulable: bool = False) -> list[Obj]:
        """``count`` nodes of the EKS managed node group ``group``, as EKS names and labels them: named
        after their InternalIP (``ip-10-0-17-42.us-west-2.compute.internal``, the region's three zones
        in turn, each its own subnet), labelled ``eks.amazonaws.com/nodegroup`` with the capacity type
        and AMI labels beside it. ``taints``, ``extended``, ``unschedulable`` (cordoned): as :meth:`node`."""
        zones = [f"{region}{letter}" for letter in "abc"]
        nodes = []
        for _ in range(count):
            index = len(self.nodes)
            zone = index % len(zones)
            address = f"10.0.{16 * zone + index // 240 % 16}.{10 + index % 240}"
            name = f"ip-{address.replace('.', '-')}.{region}.compute.internal"
            labels = {"eks.amazonaws.com/capacityType": "ON_DEMAND", "eks.amazonaws.com/nodegroup": group,
                      "eks.amazonaws.com/nodegroup-image": "ami-0c7217cdde317cfec",
                      "k8s.io/cloud-provider-aws": "a94967527effcefb5f5829f529c0a1b9"}
            nodes.append(self.node(name, cpu, memory, zones[zone], taints=[dict(t) for t in taints or []], instance_type=instance_type,
                                   region=region, labels=labels, address=address, max_pods=max_pods,
                                   provider_id=f"aws:///{zones[zone]}/i-0{hashlib.sha1(name.encode()).hexdigest()[:16]}",
                                   extended=extended, unschedulable=unschedulable))
        return nodes

    def _addresses(self, node: str) -> tuple[str, str]:
        """The node's InternalIP and the next pod IP of its CIDR (fixed ones for a node not in the dump)."""
        network = self._network.get(node)
        if network is None:
            return "10.0.0.2", "10.244.1.7"
        network[2] += 1
        return network[0], str(ipaddress.IPv4Address(network[1] + 1 + network[2] % 254))
