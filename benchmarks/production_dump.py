"""Production-size cluster dumps, end to end as users run the commands on them.

Builds the dump that ``kubectl get nodes,pods,pdb,priorityclasses,deploy,rs,sts,ds -A -o yaml`` (or
``-o json``; or JSON Lines, one item a line) prints for a production-shaped cluster, then times each
command a user runs on it, each in a process of its own (``python -m kubesched``, the same entry point
as the ``kubesched`` script), its output read only for what it says about preemption:

* ``simulate``: ``kubesched simulate DUMP`` (its preemptions and victims are reported)
* ``simulate-without``: the same on the same dump without the preemptors (below), written beside it
  as ``...-nopreempt.json`` (only when this command is run): what the preemptions cost
* ``explain``: ``kubesched explain NS/POD DUMP``, POD one of the pending pods (one too big for any node)
* ``explain-preemptor``: ``kubesched explain NS/POD DUMP``, POD one of the preemptors (reported:
  where it ends up, and how many pods it preempted)
* ``all-pending``: ``kubesched explain --all-pending DUMP -A``
* ``whatif-drain``: ``kubesched whatif DUMP --drain NODE --ignore-daemonsets --force``, NODE the node
  that runs the best mix of pods (a StatefulSet's, Deployment pods under a PDB that lets one go,
  DaemonSets', and a bare pod put there for ``--force`` to delete)
* ``whatif-no-preemption``: ``kubesched whatif DUMP --disable-preemption`` (reported: the
  preemptions and victims of each side)

For each it reports the wall-clock time (process start to exit: interpreter, reading the file,
the work, the output), the CPU seconds (user + system, from ``wait4``: the command's and its waited-for
children's; on a shared machine these vary far less than the wall clock), its peak RSS (sampled from
``/proc``: for ``whatif``, whose two sides run in two processes, the two summed), and the commit of
the kubesched it ran (with a hash of uncommitted changes to its work tree, and both versions when
they changed while it ran); a command that fails, runs past ``--timeout`` or grows past
``--max-rss`` (it is then killed) is a row saying so. The dumps' sizes on disk and the time taken to
write them are reported too, and the ratio of ``simulate`` with the preemptors to without.

The cluster: nodes in 3 zones named as EKS names them (``--cloud gke``: as GKE does) in a general pool
(70 %), a memory-optimised pool (25 %) and a GPU pool (5 %) tainted ``nvidia.com/gpu=present:NoSchedule``;
the two system PriorityClasses and five more; 2 or 3 DaemonSets (a pod on every node); a few
StatefulSets (required anti-affinity per host, under PDBs); Deployments of assorted sizes (mostly a
few replicas, some hundreds) in 30 namespaces holding most pods, some with zone spreading or
anti-affinity, probes and limits, a third of them under a PDB (``maxUnavailable: 1``, ``minAvailable:
50%``, now and then every replica, and ``minAvailable: 1`` on a single replica: so some allow no
disruption at all; 2600 PDBs at 5000 x 150 000); GPU Deployments filling the GPU pool; a few bare
pods; a few hundred pending pods whose PodScheduled condition holds kube-scheduler's message, which
can never preempt: GPU pods the full pool cannot take, pods for a node group scaled to zero
(``preemptionPolicy: Never``), and pods too big for any node; and the preemptors: the 5 pending pods
(fewer below 50 general nodes) of a Deployment ``payments/payment-authorizer`` of a class
``online-critical`` above every other but the system ones, each asking for 80 % of a general node's
allocatable CPU, which no node has free but every general or memory node would have once some of
its lower-priority pods were evicted (their message: the filters' reasons with no ``preemption:``
clause, as kube-scheduler writes it on the attempt whose PostFilter nominates a node; the dump leaves
the nomination out, so it is the cluster just before the preemption and the simulation makes it).
Pods go where kube-scheduler would roughly put them (the freest of a few nodes sampled), their
requests scaled so that nodes are about two-thirds requested (less where the pods are too few: 5000 x
20 000 is about a third). Everything comes from ``--seed``: the same arguments write the same bytes,
and the dump without the preemptors is the same bytes less their Deployment, ReplicaSet and pods.

``--keep DIR`` keeps the dumps (named by size, seed and cloud) and uses them again on the next run.
Sizes: ``small`` (1000 nodes, 20 000 pods; the default), ``wide`` (5000 x 20 000), ``large``
(5000 x 150 000) or ``NODESxPODS``. Heavy (minutes, gigabytes), so not in ``benchmarks/run.py``::

    python benchmarks/production_dump.py                          # small, yaml and json, all commands
    python benchmarks/production_dump.py --sizes large --formats json --keep /tmp/dumps
    python benchmarks/production_dump.py --sizes large --formats json --commands simulate,simulate-without
    python benchmarks/production_dump.py --nodes 200 --pods 3000 --formats yaml,json,jsonl --json -
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from kubesched.testkit.dumps.cluster import ClusterDump
from kubesched.testkit.dumps.kubectl_list import FORMATS
from kubesched.testkit.dumps.workloads import fit_message

Obj = dict[str, Any]

#: bumped whenever the generated dumps change, so that kept dumps of another version are made again
VERSION = 4
SIZES = {"small": (1000, 20000), "wide": (5000, 20000), "large": (5000, 150000)}
COMMANDS = ("simulate", "simulate-without", "explain", "explain-preemptor", "all-pending", "whatif-drain",
            "whatif-no-preemption")
#: the commands that need the dump without the preemptors beside the dump
WITHOUT_COMMANDS = frozenset({"simulate-without"})
#: what the name of the dump without the preemptors has before its suffix
WITHOUT = "-nopreempt"
GPU = "nvidia.com/gpu"
GPU_TAINT = {"effect": "NoSchedule", "key": GPU, "value": "present"}
#: target share of the general pools' CPU and memory that pods request
TARGET_CPU, TARGET_MEMORY = 0.66, 0.6
NAMESPACES = (
    "payments", "checkout", "cart", "catalog", "search", "recommendations", "ads", "identity", "accounts",
    "notifications", "messaging", "orders", "shipping", "inventory", "pricing", "reviews", "media",
    "analytics", "data-pipeline", "ml-features", "fraud", "support", "billing", "reporting", "partner-api",
    "mobile-bff", "web-frontend", "monitoring", "logging", "ingress")
PLATFORM_NAMESPACES = frozenset({"monitoring", "logging", "ingress"})
SERVICES = ("api", "web", "worker", "gateway", "consumer", "indexer", "scheduler", "sync", "exporter", "proxy",
            "cache", "renderer", "ingest", "router", "notifier", "ranker", "reporter", "uploader", "auth", "feed")
ROLES = ("", "-grpc", "-batch", "-events", "-v2", "-internal", "-public", "-canary", "-admin", "-jobs")
#: (CPU millicores, memory MiB) a pod of a Deployment asks for before scaling, and how often
BASE_SIZES = ((50, 64, 8), (100, 128, 14), (100, 256, 12), (250, 256, 12), (250, 512, 14), (500, 512, 10),
              (500, 1024, 10), (1000, 1024, 8), (1000, 2048, 6), (2000, 4096, 4), (4000, 8192, 2))
#: replicas of a Deployment: (low, high, weight)
REPLICAS = ((1, 3, 35), (4, 10, 35), (11, 30, 20), (31, 100, 8), (101, 400, 2))
#: the share of Deployments under a PodDisruptionBudget
PDB_SHARE = 0.34
#: the Deployment whose pods can only run by preempting: namespace, name, PriorityClass and its value
#: (above every class but the two system ones, which no user class may reach), share of a general
#: node's allocatable CPU each pod asks for
PREEMPTOR = ("payments", "payment-authorizer", "online-critical", 2000000, 0.8)
STATEFULSETS = (("postgres", 3), ("kafka", 5), ("zookeeper", 3), ("redis", 3), ("elasticsearch-data", 5),
                ("rabbitmq", 3), ("etcd", 3), ("clickhouse", 4))


@dataclass(frozen=True)
class Pool:
    name: str
    instance_type: str
    cpu_m: int  # allocatable
    memory_ki: int  # allocatable
    gpus: int = 0


@dataclass(frozen=True)
class Cloud:
    region: str
    zones: tuple[str, str, str]
    pool_label: str
    pools: tuple[Pool, Pool, Pool]  # general, memory, GPU
    registry: str
    daemonsets: tuple[tuple[str, int, int], ...]  # name, CPU millicores, memory MiB
    empty_pool: str  # a node group scaled to zero


CLOUDS = {
    "eks": Cloud("us-east-1", ("us-east-1a", "us-east-1b", "us-east-1c"), "eks.amazonaws.com/nodegroup",
                 (Pool("general-m6i-4xl", "m6i.4xlarge", 15890, 60055544),
                  Pool("memory-r6i-4xl", "r6i.4xlarge", 15890, 124129548),
                  Pool("gpu-g5-12xl", "g5.12xlarge", 47810, 191189604, gpus=4)),
                 "123456789012.dkr.ecr.us-east-1.amazonaws.com",
                 (("aws-node", 25, 64), ("kube-proxy", 100, 64), ("ebs-csi-node", 30, 120)), "batch-spot-c6i"),
    "gke": Cloud("us-central1", ("us-central1-a", "us-central1-b", "us-central1-c"), "cloud.google.com/gke-nodepool",
                 (Pool("general-pool", "e2-standard-16", 15890, 57847732),
                  Pool("highmem-pool", "n2-highmem-16", 15890, 119822164),
                  Pool("gpu-a100-pool", "a2-highgpu-4g", 47060, 335450232, gpus=4)),
                 "us-docker.pkg.dev/prod-project/apps",
                 (("kube-proxy", 100, 64), ("fluentbit-gke", 100, 200), ("pdcsi-node", 10, 20)), "batch-spot-pool"),
}


# -- building the cluster ------------------------------------------------------------------------------
@dataclass
class _Node:
    name: str
    zone: int
    pool: int
    cpu_m: int
    memory_mi: int
    pods: int
    gpus: int
    hosts: list[tuple[str, str]] = field(default_factory=list)  # (owner kind, key) of the pods it runs


def _cpu(millicores: int) -> str:
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def _memory(mib: int) -> str:
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def _nice(value: float, floor: int) -> int:
    """``value`` to two significant figures, at least ``floor``."""
    if value <= floor:
        return floor
    step = 10 ** max(0, int(math.log10(value)) - 1)
    return max(floor, int(round(value / step)) * step)


class _Builder:
    """Lays out the cluster (which node each pod is on) and writes it into a :class:`ClusterDump`."""

    def __init__(self, nodes: int, pods: int, seed: int, cloud: str, pending: int | None) -> None:
        if nodes < 3 or pods < nodes * 2:
            raise SystemExit(f"a dump needs at least 3 nodes and twice as many pods as nodes (not {nodes} x {pods})")
        self.rng = random.Random(seed)
        self.cloud = CLOUDS[cloud]
        self.cloud_name = cloud
        self.n_nodes, self.n_pods = nodes, pods
        self.n_pending = pending if pending is not None else max(3, min(500, pods // 100))
        self.dump = ClusterDump()
        self.nodes: list[_Node] = []
        self.counts: Counter[str] = Counter()
        self.pdb_apps: dict[tuple[str, str], int] = {}  # (namespace, name) of a Deployment -> disruptions allowed
        self.explain_pod = ""
        general = nodes - max(1, round(nodes * 0.05))
        self.n_preemptors = max(1, min(5, general // 10))
        self.preemptor_pod = ""

    # nodes ---------------------------------------------------------------------------------------------
    def _node_name(self, pool: Pool, zone: int, k: int) -> tuple[str, str, str]:
        """A node's name, InternalIP and providerID, as the cloud names them."""
        address = 0x0A000000 + (zone << 14) + 16 + (k * 7) % 16000
        a, b, c, d = address.to_bytes(4, "big")
        zone_name = self.cloud.zones[zone]
        instance = f"{self.rng.getrandbits(64):016x}"[:17]
        if self.cloud_name == "eks":
            return (f"ip-{a}-{b}-{c}-{d}.{self.cloud.region}.compute.internal", f"{a}.{b}.{c}.{d}",
                    f"aws:///{zone_name}/i-0{instance}")
        group = hashlib.sha1(f"{pool.name}/{zone_name}".encode()).hexdigest()[:8]  # the pool's group in the zone
        suffix = "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(4))
        name = f"gke-prod-{pool.name}-{group}-{suffix}"
        return name, f"{a}.{b}.{c}.{d}", f"gce://prod-project/{zone_name}/{name}"

    def add_nodes(self) -> None:
        n_gpu = max(1, round(self.n_nodes * 0.05))
        n_memory = round((self.n_nodes - n_gpu) * 0.25)
        layout = [0] * (self.n_nodes - n_gpu - n_memory) + [1] * n_memory + [2] * n_gpu
        per_zone = [0, 0, 0]
        names: set[str] = set()
        for i, p in enumerate(layout):
            pool, zone = self.cloud.pools[p], i % 3
            name, address, provider = self._node_name(pool, zone, per_zone[zone])
            while name in names:  # two GKE suffixes alike
                name, address, provider = self._node_name(pool, zone, per_zone[zone])
            names.add(name)
            per_zone[zone] += 1
            labels = {self.cloud.pool_label: pool.name}
            if self.cloud_name == "eks":
                labels |= {"eks.amazonaws.com/capacityType": "ON_DEMAND", "eks.amazonaws.com/nodegroup-image":
                           "ami-0c7217cdde317cfec", "k8s.io/cloud-provider-aws": "a94967527effcefb5f5829f529c0a1b9"}
            else:
                labels |= {"cloud.google.com/gke-boot-disk": "pd-balanced", "cloud.google.com/gke-container-runtime":
                           "containerd", "cloud.google.com/machine-family": pool.instance_type.split("-")[0]}
            if pool.gpus:
                labels["nvidia.com/gpu.present"] = "true"
            self.dump.node(name, cpu=_cpu(pool.cpu_m), memory=f"{pool.memory_ki}Ki", zone=self.cloud.zones[zone],
                           taints=[dict(GPU_TAINT)] if pool.gpus else None, instance_type=pool.instance_type,
                           region=self.cloud.region, labels=labels, address=address, provider_id=provider,
                           extended={GPU: str(pool.gpus)} if pool.gpus else None)
            self.nodes.append(_Node(name, zone, p, pool.cpu_m, pool.memory_ki // 1024, 110, pool.gpus))
        self.counts["nodes"] = len(self.nodes)

    def _take(self, node: _Node, cpu_m: int, memory_mi: int, gpus: int, kind: str, key: str) -> None:
        node.cpu_m -= cpu_m
        node.memory_mi -= memory_mi
        node.pods -= 1
        node.gpus -= gpus
        node.hosts.append((kind, key))

    def _place(self, candidates: list[_Node], cpu_m: int, memory_mi: int, avoid: set[str] | None = None
               ) -> _Node | None:
        """The freest of a few sampled nodes that has room (kube-scheduler's LeastAllocated, roughly)."""
        def fits(n: _Node) -> bool:
            return n.cpu_m >= cpu_m and n.memory_mi >= memory_mi and n.pods > 0 and not (avoid and n.name in avoid)
        for sample in (3, 12):
            picked = [n for n in (self.rng.choice(candidates) for _ in range(sample)) if fits(n)]
            if picked:
                return max(picked, key=lambda n: (n.cpu_m * n.memory_mi, n.name))
        room = [n for n in candidates if fits(n)]
        return max(room, key=lambda n: (n.cpu_m * n.memory_mi, n.name)) if room else None

    # workloads -------------------------------------------------------------------------------------------
    def add_classes(self) -> None:
        self.dump.system_classes()
        self.dump.priority_class("platform-critical", 1000000)
        self.dump.priority_class("online", 100000)
        self.dump.priority_class("standard", 10000)
        self.dump.priority_class("batch-low", 100, preemption_policy="Never")
        self.dump.priority_class(PREEMPTOR[2], PREEMPTOR[3])

    def add_daemonsets(self) -> None:
        count = 3 if self.n_pods >= 8 * self.n_nodes else 2
        for name, cpu_m, memory_mi in self.cloud.daemonsets[:count]:
            self.dump.daemonset_pods(name, cpu=_cpu(cpu_m), memory=_memory(memory_mi),
                                     image=f"registry.k8s.io/{name}:v1.28.7")
            for node in self.nodes:
                self._take(node, cpu_m, memory_mi, 0, "DaemonSet", name)
        self.counts["daemonsets"] = count
        self.counts["daemonset pods"] = count * len(self.nodes)

    def _container_extra(self, probes: bool, port: int = 8080) -> Obj:
        extra: Obj = {"ports": [{"containerPort": port, "name": "http", "protocol": "TCP"}]}
        if probes:
            extra["livenessProbe"] = {"failureThreshold": 3, "httpGet": {"path": "/healthz", "port": "http",
                                                                          "scheme": "HTTP"},
                                      "initialDelaySeconds": 10, "periodSeconds": 10, "successThreshold": 1,
                                      "timeoutSeconds": 1}
            extra["readinessProbe"] = {"failureThreshold": 3, "httpGet": {"path": "/ready", "port": "http",
                                                                           "scheme": "HTTP"},
                                       "periodSeconds": 5, "successThreshold": 1, "timeoutSeconds": 1}
            extra["securityContext"] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                        "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
        return extra

    @staticmethod
    def _resources(cpu_m: int, memory_mi: int, shape: float) -> Obj:
        requests = {"cpu": _cpu(cpu_m), "memory": _memory(memory_mi)}
        if shape < 0.15:  # Guaranteed
            return {"limits": dict(requests), "requests": requests}
        if shape < 0.75:
            return {"limits": {"memory": _memory(memory_mi * 2)}, "requests": requests}
        return {"requests": requests}

    def add_statefulsets(self) -> None:
        general = [n for n in self.nodes if n.pool < 2]
        count = min(len(STATEFULSETS), max(2, self.n_nodes // 150))
        for name, replicas in STATEFULSETS[:count]:
            replicas = min(replicas, len(general))
            cpu_m, memory_mi = 1000, 4096
            used: set[str] = set()
            placed: list[str | None] = []
            for _ in range(replicas):
                node = self._place(general, cpu_m, memory_mi, avoid=used)
                if node is not None:
                    used.add(node.name)
                    self._take(node, cpu_m, memory_mi, 0, "StatefulSet", f"data/{name}")
                placed.append(node.name if node else None)
            anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": name}}, "topologyKey": "kubernetes.io/hostname"}]}}}
            self.dump.statefulset(name, placed, "data", resources=self._resources(cpu_m, memory_mi, 0.1),
                                  priority_class="platform-critical", priority=1000000, template_extra=anti,
                                  container_extra=self._container_extra(True, 9000), service_name=f"{name}-headless",
                                  image=f"{self.cloud.registry}/data/{name}:2.4.1")
            self.dump.pdb(name, "data", {"app": name}, max_unavailable=1, allowed=1 if None not in placed else 0,
                          healthy=sum(1 for p in placed if p), expected=replicas)
            self.counts["statefulset pods"] += replicas
        self.counts["statefulsets"] = count

    def add_gpu_deployments(self) -> None:
        gpu_nodes = [n for n in self.nodes if n.gpus]
        free = sum(n.gpus for n in gpu_nodes)
        pool = self.cloud.pools[2]
        k = 0
        while free > 0:
            per_pod = 2 if self.rng.random() < 0.25 and any(n.gpus >= 2 for n in gpu_nodes) else 1
            replicas = min(sum(n.gpus // per_pod for n in gpu_nodes), self.rng.randint(2, 12))
            name = f"{('llm-serving', 'embeddings', 'vision', 'speech', 'ranker-gpu')[k % 5]}-{k // 5}"
            cpu_m, memory_mi = per_pod * 6000, per_pod * 24576
            placed: list[str | None] = []
            for _ in range(replicas):
                node = max((n for n in gpu_nodes if n.gpus >= per_pod), key=lambda n: (n.gpus, n.name))
                self._take(node, cpu_m, memory_mi, per_pod, "ReplicaSet", f"ml-serving/{name}")
                placed.append(node.name)
            free -= replicas * per_pod
            resources = {"limits": {GPU: str(per_pod), "memory": _memory(memory_mi)},
                         "requests": {"cpu": _cpu(cpu_m), GPU: str(per_pod), "memory": _memory(memory_mi)}}
            self.dump.deployment(name, replicas, placed, "ml-serving", resources=resources, priority_class="online",
                                 priority=100000, template_extra={
                                     "nodeSelector": {self.cloud.pool_label: pool.name},
                                     "tolerations": [{"effect": "NoSchedule", "key": GPU, "operator": "Exists"}]},
                                 container_extra=self._container_extra(True), cpu=_cpu(cpu_m),
                                 image=f"{self.cloud.registry}/ml-serving/{name}:1.9.0")
            self.counts["gpu pods"] += replicas
            k += 1

    def _plan_deployments(self, budget: int) -> list[tuple[str, str, int, int]]:
        """(namespace, name, replicas, base size index) of Deployments holding ``budget`` pods."""
        weights = [w for _, _, w in REPLICAS]
        sizes = [w for _, _, w in BASE_SIZES]
        plan: list[tuple[str, str, int, int]] = []
        taken: set[tuple[str, str]] = set()
        while budget > 0:
            low, high, _ = self.rng.choices(REPLICAS, weights)[0]
            replicas = min(budget, self.rng.randint(low, high))
            namespace = self.rng.choice(NAMESPACES)
            name = self.rng.choice(SERVICES) + self.rng.choice(ROLES)
            n = 1
            while (namespace, name) in taken:
                n += 1
                name = f"{name.rsplit('-x', 1)[0]}-x{n}"
            taken.add((namespace, name))
            plan.append((namespace, name, replicas, self.rng.choices(range(len(BASE_SIZES)), sizes)[0]))
            budget -= replicas
        return plan

    def add_deployments(self, budget: int) -> None:
        general = [n for n in self.nodes if n.pool < 2]
        zones = [[n for n in general if n.zone == z] for z in range(3)]
        plan = self._plan_deployments(budget)
        want_cpu = sum(BASE_SIZES[s][0] * r for _, _, r, s in plan)
        want_memory = sum(BASE_SIZES[s][1] * r for _, _, r, s in plan)
        have_cpu = sum(n.cpu_m for n in general)
        have_memory = sum(n.memory_mi for n in general)
        scale_cpu = TARGET_CPU * have_cpu / max(1, want_cpu)
        scale_memory = TARGET_MEMORY * have_memory / max(1, want_memory)
        max_cpu, max_memory = self.cloud.pools[0].cpu_m // 4, self.cloud.pools[0].memory_ki // 1024 // 4
        for namespace, name, replicas, s in plan:
            cpu_m = min(max_cpu, _nice(BASE_SIZES[s][0] * scale_cpu * self.rng.uniform(0.7, 1.3), 10))
            memory_mi = min(max_memory, _nice(BASE_SIZES[s][1] * scale_memory * self.rng.uniform(0.7, 1.3), 16))
            roll = self.rng.random()
            template: Obj = {}
            if replicas >= 3 and roll < 0.25:
                template["topologySpreadConstraints"] = [{
                    "labelSelector": {"matchLabels": {"app": name}}, "matchLabelKeys": ["pod-template-hash"],
                    "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}]
            elif replicas >= 2 and roll < 0.4:
                template["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"podAffinityTerm": {"labelSelector": {"matchLabels": {"app": name}},
                                         "topologyKey": "kubernetes.io/hostname"}, "weight": 100}]}}
            priority_class: str | None
            if namespace in PLATFORM_NAMESPACES:
                priority_class, priority = "platform-critical", 1000000
            else:
                priority_class, priority = self.rng.choices(
                    (("online", 100000), ("standard", 10000), (None, 0)), (30, 55, 15))[0]
            placed: list[str | None] = []
            for i in range(replicas):
                spread = "topologySpreadConstraints" in template
                node = (self._place(zones[i % 3], cpu_m, memory_mi) if spread else None) \
                    or self._place(general, cpu_m, memory_mi)
                if node is None:
                    raise SystemExit(f"no room for {namespace}/{name}: the pods ask for more than the nodes have")
                self._take(node, cpu_m, memory_mi, 0, "ReplicaSet", f"{namespace}/{name}")
                placed.append(node.name)
            self.dump.deployment(name, replicas, placed, namespace, cpu=_cpu(cpu_m), memory=_memory(memory_mi),
                                 resources=self._resources(cpu_m, memory_mi, self.rng.random()),
                                 priority_class=priority_class, priority=priority, template_extra=template or None,
                                 container_extra=self._container_extra(self.rng.random() < 0.7),
                                 image=f"{self.cloud.registry}/{namespace}/{name}:1.{self.rng.randint(0, 40)}.0")
            if self.rng.random() < PDB_SHARE:
                self._pdb(namespace, name, replicas)
        self.counts["deployments"] += len(plan)
        self.counts["deployment pods"] += budget

    def _pdb(self, namespace: str, name: str, replicas: int) -> None:
        """A PDB on the Deployment's pods (all of them running and ready), with the status the
        disruption controller writes: one replica kept by ``minAvailable: 1`` (none may go), else
        ``maxUnavailable: 1`` (one may), ``minAvailable: 50%`` or, now and then, every replica
        (``minAvailable`` = replicas: none may go)."""
        roll = self.rng.random()
        if replicas == 1:
            min_available: int | str | None = 1
            max_unavailable, desired = None, 1
        elif roll < 0.45:
            min_available, max_unavailable, desired = None, 1, replicas - 1
        elif roll < 0.88:
            min_available, max_unavailable, desired = "50%", None, math.ceil(replicas / 2)
        else:
            min_available, max_unavailable, desired = replicas, None, replicas
        self.dump.pdb(name, namespace, {"app": name}, min_available=min_available, max_unavailable=max_unavailable,
                      allowed=replicas - desired, healthy=replicas, expected=replicas)
        self.pdb_apps[(namespace, name)] = replicas - desired

    def add_bare_pods(self, count: int, first_on: _Node) -> None:
        """``count`` pods without a controller (``kubectl run``), the first on ``first_on``."""
        general = [n for n in self.nodes if n.pool < 2]
        for i in range(count):
            node = first_on if i == 0 and first_on.cpu_m >= 100 and first_on.memory_mi >= 128 and first_on.pods \
                else self._place(general, 100, 128)
            assert node is not None
            name = f"debug-{self.rng.choice(('shell', 'netshoot', 'curl', 'psql'))}-{i}"
            self._take(node, 100, 128, 0, "", f"default/{name}")
            self.dump.pod(name, "default", node=node.name, cpu="100m", memory="128Mi", labels={"run": name},
                          minutes_before=120 - i % 100, image="docker.io/nicolaka/netshoot:v0.11")
        self.counts["bare pods"] = count

    def add_pending(self) -> None:
        """Pending pods of three kinds, each with the message kube-scheduler wrote on it."""
        total = len(self.nodes)
        gpu_nodes = sum(1 for n in self.nodes if n.pool == 2)
        general = total - gpu_nodes
        taint = f"node(s) had untolerated taint {{{GPU}: present}}"
        selector = "node(s) didn't match Pod's node affinity/selector"
        not_helpful, no_victims = "Preemption is not helpful for scheduling", "No preemption victims found for incoming pod"
        n_gpu = self.n_pending * 3 // 10
        n_selector = self.n_pending * 4 // 10
        n_big = self.n_pending - n_gpu - n_selector
        pool = self.cloud.pools[2]
        for k, count in enumerate(_batches(n_gpu, 40)):
            name = f"llm-training-{k}"
            resources = {"limits": {GPU: "1", "memory": "24Gi"}, "requests": {"cpu": "6", GPU: "1", "memory": "24Gi"}}
            message = fit_message(total, {f"Insufficient {GPU}": gpu_nodes, selector: general},
                                  {no_victims: gpu_nodes, not_helpful: general})
            self.dump.deployment(name, count, [None] * count, "ml-training", resources=resources, cpu="6",
                                 priority_class="standard", priority=10000, pending_message=message,
                                 template_extra={"nodeSelector": {self.cloud.pool_label: pool.name}, "tolerations": [
                                     {"effect": "NoSchedule", "key": GPU, "operator": "Exists"}]},
                                 image=f"{self.cloud.registry}/ml-training/trainer:0.7.2")
        for k, count in enumerate(_batches(n_selector, 50)):
            name = f"nightly-etl-{k}"
            message = fit_message(total, {selector: general, taint: gpu_nodes},
                                  "not eligible due to preemptionPolicy=Never.")
            self.dump.deployment(name, count, [None] * count, "data-pipeline", cpu="2", memory="8Gi",
                                 resources=self._resources(2000, 8192, 0.5), priority_class="batch-low", priority=100,
                                 preemption_policy="Never", pending_message=message,
                                 template_extra={"nodeSelector": {self.cloud.pool_label: self.cloud.empty_pool}},
                                 image=f"{self.cloud.registry}/data-pipeline/etl:3.2.0")
        biggest = max(n.cpu_m for n in self.nodes if n.pool < 2)
        cpu_m = min(self.cloud.pools[0].cpu_m, _nice(biggest + 500, 100) + 100)
        short_of_memory = sum(1 for n in self.nodes if n.pool < 2 and n.memory_mi < 16384)
        for k, count in enumerate(_batches(n_big, 25)):
            name = f"report-builder-{k}"
            message = fit_message(total, {"Insufficient cpu": general, "Insufficient memory": short_of_memory,
                                          taint: gpu_nodes}, {no_victims: general, not_helpful: gpu_nodes})
            _, _, pods = self.dump.deployment(name, count, [None] * count, "reporting", cpu=_cpu(cpu_m),
                                              memory="16Gi", resources=self._resources(cpu_m, 16384, 0.9),
                                              pending_message=message,
                                              image=f"{self.cloud.registry}/reporting/builder:5.0.1")
            if not self.explain_pod:
                self.explain_pod = f"reporting/{pods[0]['metadata']['name']}"
        self.counts["pending pods"] = self.n_pending

    def drain_node(self) -> _Node:
        """The general node that runs the best mix: most kinds of owner, then pods under a PDB that
        lets one go, then pods; none that runs a pod whose PDB lets none go (its drain would never end)."""
        def allowed(kind: str, key: str) -> int | None:
            namespace, _, name = key.partition("/")
            return self.pdb_apps.get((namespace, name)) if kind == "ReplicaSet" else None

        def score(node: _Node) -> tuple[bool, int, int, int, str]:
            kinds = {kind for kind, _ in node.hosts}
            budgets = [a for a in (allowed(kind, key) for kind, key in node.hosts) if a is not None]
            guarded = sum(1 for a in budgets if a)
            return 0 not in budgets, len(kinds), min(guarded, 3), len(node.hosts), node.name
        return max((n for n in self.nodes if n.pool < 2), key=score)

    def add_preemptors(self) -> None:
        """The pending pods of a Deployment of the highest class that no node has room for but every
        general and memory node would have once lower-priority pods were evicted: each asks for
        ``PREEMPTOR[4]`` of a general node's allocatable CPU (more where a node has that much free).
        Their message is the one kube-scheduler writes on the attempt that preempts: the filters'
        reasons alone, as a PostFilter that nominates a node adds nothing (upstream
        ``FitError.Error``); the ``nominatedNodeName`` it writes with it is left out, so that the dump
        is the cluster as it was before the preemption and the simulation makes it."""
        namespace, name, priority_class, priority, share = PREEMPTOR
        general = [n for n in self.nodes if n.pool < 2]
        pool = self.cloud.pools[0]
        cpu_m = max(int(pool.cpu_m * share) // 100 * 100, _nice(max(n.cpu_m for n in general) + 100, 100) + 100)
        daemons = sum(cpu for ds, cpu, _ in self.cloud.daemonsets[:self.counts["daemonsets"]])
        if cpu_m > pool.cpu_m - daemons:
            raise SystemExit(f"a node of {self.n_nodes} x {self.n_pods} has too much CPU free for a pod to need "
                             f"preemption ({cpu_m}m > {pool.cpu_m - daemons}m)")
        memory_mi = 8192
        gpu_nodes = len(self.nodes) - len(general)
        message = fit_message(len(self.nodes), {
            "Insufficient cpu": len(general), "Insufficient memory": sum(1 for n in general if n.memory_mi < memory_mi),
            f"node(s) had untolerated taint {{{GPU}: present}}": gpu_nodes}, None)
        _, _, pods = self.dump.deployment(
            name, self.n_preemptors, [None] * self.n_preemptors, namespace, cpu=_cpu(cpu_m), memory=_memory(memory_mi),
            resources=self._resources(cpu_m, memory_mi, 0.1), priority_class=priority_class, priority=priority,
            pending_message=message, container_extra=self._container_extra(True),
            image=f"{self.cloud.registry}/{namespace}/{name}:4.2.0")
        self.preemptor_pod = f"{namespace}/{pods[0]['metadata']['name']}"
        self.counts["preemptor pods"] = self.n_preemptors
        self.counts["preemptor cpu millicores"] = cpu_m

    def build(self) -> tuple[ClusterDump, Obj]:
        self.add_classes()
        self.add_nodes()
        self.add_daemonsets()
        self.add_statefulsets()
        self.add_gpu_deployments()
        bare = max(1, min(15, self.n_pods // 10000))
        budget = self.n_pods - sum(self.counts[k] for k in ("daemonset pods", "statefulset pods", "gpu pods"))
        budget -= bare + self.n_pending + self.n_preemptors
        if budget < 1:
            raise SystemExit(f"{self.n_pods} pods are too few for {self.n_nodes} nodes' DaemonSets and the rest")
        self.add_deployments(budget)
        drain = self.drain_node()
        self.add_bare_pods(bare, drain)  # `--force` has one to delete there
        self.add_pending()
        self.add_preemptors()  # last: the dump without them is this one with their objects taken out
        self.dump.sort()
        general = [n for n in self.nodes if n.pool < 2]
        pool = self.cloud.pools[0]
        used_cpu = 1 - sum(n.cpu_m for n in general) / sum(self.cloud.pools[n.pool].cpu_m for n in general)
        assert len(self.dump.pods) == self.n_pods, (len(self.dump.pods), self.n_pods)
        meta = {"version": VERSION, "nodes": self.n_nodes, "pods": self.n_pods, "cloud": self.cloud_name,
                "explain_pod": self.explain_pod, "preemptor_pod": self.preemptor_pod, "drain_node": drain.name, "drain_node_pods": len(drain.hosts),
                "drain_node_kinds": dict(Counter(kind or "none (bare)" for kind, _ in drain.hosts)),
                "requested_cpu_share": round(used_cpu, 3), "general_pool": pool.instance_type,
                "counts": dict(self.counts) | {"pdbs": len(self.dump.pdbs), "classes": len(self.dump.classes),
                                               "pdbs allowing none": sum(1 for p in self.dump.pdbs
                                                                         if not p["status"]["disruptionsAllowed"]),
                                               "deployments under a pdb": len(self.pdb_apps)}}
        return self.dump, meta


def _batches(total: int, size: int) -> list[int]:
    return [min(size, total - start) for start in range(0, total, size)]


def build(nodes: int, pods: int, *, seed: int = 1, cloud: str = "eks", pending: int | None = None
          ) -> tuple[ClusterDump, Obj]:
    """The dump of a production-shaped cluster of ``nodes`` nodes and ``pods`` pods in all, and what
    the benchmark needs to know about it (the pod to explain, the node to drain, counts)."""
    return _Builder(nodes, pods, seed, cloud, pending).build()


def without_preemptors(dump: ClusterDump) -> None:
    """Take the preemptors' Deployment, ReplicaSet and pods out of ``dump`` (built last, so the rest
    is the dump built without them byte for byte; their PriorityClass stays)."""
    namespace, name = PREEMPTOR[:2]

    def theirs(obj: Obj) -> bool:
        meta = obj["metadata"]
        return meta.get("namespace") == namespace and (meta.get("labels") or {}).get("app") == name
    dump.pods[:] = [p for p in dump.pods if not theirs(p)]
    dump.workloads[:] = [w for w in dump.workloads if not theirs(w)]


# -- the dumps on disk -------------------------------------------------------------------------------------
def dump_paths(directory: Path, nodes: int, pods: int, seed: int, cloud: str) -> tuple[Path, dict[str, Path]]:
    """The meta data's path, and the dump's path per format; ``FMT-nopreempt``: the dump without the preemptors."""
    stem = f"{cloud}-{nodes}n-{pods}p-s{seed}"
    paths = {fmt: directory / f"{stem}{suffix}" for fmt, suffix in FORMATS.items()}
    paths |= {fmt + WITHOUT: directory / f"{stem}{WITHOUT}{suffix}" for fmt, suffix in FORMATS.items()}
    return directory / f"{stem}.meta.json", paths


def ensure_dumps(directory: Path, nodes: int, pods: int, formats: list[str], *, seed: int = 1, cloud: str = "eks",
                 without: bool = False, log: Callable[[str], None] = print) -> tuple[Obj, list[Obj]]:
    """The dump of this size in each of ``formats`` under ``directory`` (``without``: and the same
    dump without the preemptors beside it), written unless a dump of this version is there already;
    returns its meta data and a row per format (file sizes, write times)."""
    meta_path, paths = dump_paths(directory, nodes, pods, seed, cloud)
    meta: Obj | None = None
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("version") != VERSION:
            meta = None
    wanted = [*formats, *(fmt + WITHOUT for fmt in formats if without)]
    missing = [fmt for fmt in wanted if meta is None or not paths[fmt].exists() or fmt not in meta.get("written", {})]
    if missing:
        log(f"building the {nodes} x {pods} dump ...")
        start = time.perf_counter()
        dump, built = build(nodes, pods, seed=seed, cloud=cloud)
        built["build_seconds"] = round(time.perf_counter() - start, 2)
        built["written"] = {} if meta is None else meta.get("written", {})
        meta = built
        stripped = False
        for fmt in sorted(missing, key=lambda f: f.endswith(WITHOUT)):  # with the preemptors first
            if fmt.endswith(WITHOUT) and not stripped:
                without_preemptors(dump)
                stripped = True
            start = time.perf_counter()
            dump.write(paths[fmt], fmt.removesuffix(WITHOUT))
            meta["written"][fmt] = round(time.perf_counter() - start, 2)
            log(f"  {paths[fmt].name}: {paths[fmt].stat().st_size / 2**20:.0f} MiB in {meta['written'][fmt]:.1f} s")
        meta_path.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        del dump
        gc.collect()
    assert meta is not None
    rows = []
    for fmt in formats:
        row = {"size": f"{nodes}x{pods}", "format": fmt, "path": str(paths[fmt]),
               "mib": round(paths[fmt].stat().st_size / 2**20, 1),
               "write_seconds": meta["written"][fmt] if fmt in missing else None}
        if without:
            row["without_path"] = str(paths[fmt + WITHOUT])
        rows.append(row)
    return meta, rows


# -- running the commands ----------------------------------------------------------------------------------
@dataclass
class Run:
    size: str
    format: str
    command: str
    status: str  # ok, timeout, exit N, signal N
    seconds: float
    peak_rss_mib: float
    detail: str = ""
    cpu_seconds: float = 0.0  # user + system, the command's process and the children it waited for
    result: str = ""  # what the command said about the preemptors (preemptions, victims), where it says it
    code: str = ""  # the commit of the kubesched it ran (+ a hash of uncommitted changes)


def without_path(path: Path) -> Path:
    """The dump without the preemptors beside the dump at ``path``."""
    suffix = next(s for s in sorted(FORMATS.values(), key=len, reverse=True) if path.name.endswith(s))
    return path.with_name(path.name.removesuffix(suffix) + WITHOUT + suffix)


def command_line(command: str, path: Path, meta: Obj) -> list[str]:
    """The arguments of ``kubesched`` for ``command`` on the dump at ``path``."""
    if command == "simulate":
        return ["simulate", str(path)]
    if command == "simulate-without":
        return ["simulate", str(without_path(path))]
    if command == "explain":
        return ["explain", meta["explain_pod"], str(path)]
    if command == "explain-preemptor":
        return ["explain", meta["preemptor_pod"], str(path)]
    if command == "all-pending":
        return ["explain", "--all-pending", str(path), "-A"]
    if command == "whatif-drain":
        return ["whatif", str(path), "--drain", meta["drain_node"], "--ignore-daemonsets", "--force"]
    if command == "whatif-no-preemption":
        return ["whatif", str(path), "--disable-preemption"]
    raise ValueError(f"unknown command {command!r}")


def what_it_said(command: str, output: str) -> str:
    """The part of a command's (table) output about preemption: the preemptions and victims of
    ``simulate`` and of each side of ``whatif``, the verdict of ``explain`` on a preemptor."""
    if command.startswith("simulate"):
        found = re.search(r"preemptions\s+(\d+),\s+victims\s+(\d+)", output)
        return f"{found[1]} preemptions, {found[2]} victims" if found else ""
    if command == "explain-preemptor":  # "POD (priority N) at t=..: Running on NODE", then "preempted VICTIM ..." lines
        text = re.sub(r"\s+", " ", output.split("Filters that reject", 1)[0])  # as one line, however wrapped
        state = re.search(r"\(end of the run\): (\w+)", text)
        victims = len(re.findall(r"(?:^| )preempted \S+ \(priority", text))
        return f"{state[1]}, {victims} victim{'s' * (victims != 1)}" if state else ""
    if command.startswith("whatif"):
        found = re.search(r"preemptions\s*[│|]\s*(\d+)\s*[│|]\s*(\d+)", output)
        victims = re.search(r"victims\s*[│|]\s*(\d+)\s*[│|]\s*(\d+)", output)
        if found and victims:
            return f"preemptions {found[1]} -> {found[2]}, victims {victims[1]} -> {victims[2]}"
    return ""


def code_version() -> str:
    """The commit of the git work tree ``kubesched`` is imported from, with a hash of its uncommitted
    changes under src/ (another engineer's work in progress changes the figures too); "" outside git."""
    found = subprocess.run([*kubesched_argv()[:1], "-c", "import kubesched; print(kubesched.__file__)"],
                           capture_output=True, text=True, check=False)
    src = Path(found.stdout.strip()).parent.parent
    head = subprocess.run(["git", "-C", str(src), "log", "-1", "--format=%h"], capture_output=True, text=True,
                          check=False)
    if head.returncode:
        return ""
    diff = subprocess.run(["git", "-C", str(src), "diff", "HEAD", "--", "."], capture_output=True, check=False)
    dirty = f"+{hashlib.sha1(diff.stdout).hexdigest()[:8]}" if diff.stdout else ""
    return head.stdout.strip() + dirty


def memory_mib() -> float:
    """The machine's memory (MiB)."""
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024
    return float("inf")


def _status_mib(pid: int, field: str) -> float:
    """A memory figure of ``/proc/PID/status`` (VmRSS, VmHWM) in MiB; 0 once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (a whatif's forked child)."""
    out = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as children:
                out += [p for child in children.read().split() for p in _tree(int(child))]
    except OSError:
        pass
    return out


class Outcome(NamedTuple):
    status: str  # ok, exit N, signal N, timeout, memory
    seconds: float  # wall clock
    peak_rss_mib: float
    detail: str  # the last line it wrote to stderr, when not ok
    cpu_seconds: float  # user + system
    output: str  # the first 256 KiB it wrote to stdout


def run_once(argv: list[str], timeout: float, max_rss_mib: float = float("inf")) -> Outcome:
    """Run ``argv`` and wait for it: its status (ok, exit N, signal N, timeout, memory), wall-clock
    seconds, peak RSS (MiB), the last line it wrote to stderr, its CPU seconds and the start of its
    output. It is killed past ``timeout`` seconds, or once its RSS passes ``max_rss_mib`` (before the
    machine runs out).

    The peak is sampled from ``/proc`` every 0.1 s: the process's own high-water mark (``VmHWM``),
    or the RSS of it and its children summed, whichever is larger (a what-if runs its two sides in
    two processes at once; pages they share count twice there). ``wait4``'s figure is not used: it
    includes the RSS this process had when it forked the command, gigabytes after building a dump.
    The CPU seconds are ``wait4``'s (user + system of the process and of the children it waited
    for: a what-if's forked side): on a shared machine they vary far less than the wall clock."""
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        done = threading.Event()
        killed: list[str] = []

        def kill(why: str) -> None:
            killed.append(why)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        peak = [0.0]

        def watch() -> None:
            while not done.wait(0.1):
                if time.perf_counter() - start > timeout:
                    return kill("timeout")
                rss = sum(_status_mib(pid, "VmRSS") for pid in _tree(proc.pid))
                peak[0] = max(peak[0], rss, _status_mib(proc.pid, "VmHWM"))
                if rss > max_rss_mib:
                    return kill("memory")

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            _, wait_status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            kill("interrupted")
            proc.wait()
            raise
        finally:
            done.set()
            watcher.join()
        seconds = time.perf_counter() - start
        proc.returncode = code = os.waitstatus_to_exitcode(wait_status)
        err.seek(0)
        lines = [line for line in err.read().decode(errors="replace").splitlines() if line.strip()]
        out.seek(0)
        output = out.read(256 * 1024).decode(errors="replace")
    if killed:
        status = killed[0]
    elif code == 0:
        status = "ok"
    else:
        status = f"exit {code}" if code > 0 else f"signal {-code}"
    detail = "" if status == "ok" else (lines[-1].strip()[:200] if lines else "")
    if status == "memory":
        detail = f"killed at {max_rss_mib:.0f} MiB RSS"
    return Outcome(status, seconds, peak[0], detail, usage.ru_utime + usage.ru_stime, output)


def kubesched_argv() -> list[str]:
    """``kubesched`` run by this interpreter (the console script calls the same ``kubesched.cli.main:main``)."""
    return [sys.executable, "-m", "kubesched"]


def run_commands(size: str, fmt: str, path: Path, meta: Obj, commands: list[str], timeout: float,
                 max_rss_mib: float = float("inf"), log: Callable[[str], None] = print) -> list[Run]:
    runs = []
    for command in commands:
        argv = kubesched_argv() + command_line(command, path, meta)
        code = code_version()
        run = run_once(argv, timeout, max_rss_mib)
        after = code_version()
        if after != code:  # the code changed under it: say both
            code = f"{code} / {after}"
        result = what_it_said(command, run.output) if run.status == "ok" else ""
        runs.append(Run(size, fmt, command, run.status, round(run.seconds, 2), round(run.peak_rss_mib, 1), run.detail,
                        round(run.cpu_seconds, 2), result, code))
        log(f"  {command:<20} {fmt:<5} {size:<12} {run.status:<8} {run.seconds:8.1f} s {run.cpu_seconds:8.1f} s CPU "
            f"{run.peak_rss_mib:8.0f} MiB  {code}  {result or run.detail}")
    return runs


# -- output ----------------------------------------------------------------------------------------------
def table(dumps: list[Obj], runs: list[Run]) -> str:
    mib = {(d["size"], d["format"]): d["mib"] for d in dumps}
    lines = [f"{'size':<12} {'format':<6} {'dump MiB':>9} {'command':<20} {'seconds':>9} {'CPU s':>8} "
             f"{'peak RSS MiB':>13}  {'code':<18} status", "-" * 110]
    for r in runs:
        seconds = f">{r.seconds:.0f}" if r.status == "timeout" else f"{r.seconds:.1f}"
        status = r.status if r.status == "ok" else f"{r.status}: {r.detail}" if r.detail else r.status
        if r.result:
            status += f" ({r.result})"
        lines.append(f"{r.size:<12} {r.format:<6} {mib[(r.size, r.format)]:>9.0f} {r.command:<20} {seconds:>9} "
                     f"{r.cpu_seconds:>8.1f} {r.peak_rss_mib:>13.0f}  {r.code:<18} {status}")
    for key in sorted({(r.size, r.format) for r in runs}):
        pair = {r.command: r for r in runs if (r.size, r.format) == key and r.status == "ok"}
        if "simulate" in pair and "simulate-without" in pair:
            with_, without = pair["simulate"], pair["simulate-without"]
            lines.append(f"{key[0]} {key[1]}: simulate with the preemptors / without: "
                         f"{with_.seconds / without.seconds:.2f}x wall, "
                         f"{with_.cpu_seconds / max(without.cpu_seconds, 0.01):.2f}x CPU")
    return "\n".join(lines)


def parse_sizes(text: str) -> list[tuple[int, int]]:
    sizes = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        if part in SIZES:
            sizes.append(SIZES[part])
        else:
            nodes, _, pods = part.partition("x")
            if not (nodes.isdigit() and pods.isdigit()):
                raise argparse.ArgumentTypeError(f"a size is one of {', '.join(SIZES)} or NODESxPODS, not {part!r}")
            sizes.append((int(nodes), int(pods)))
    return sizes


def _names(allowed: tuple[str, ...] | list[str], what: str) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        names = [p.strip() for p in text.split(",") if p.strip()]
        wrong = [n for n in names if n not in allowed]
        if wrong or not names:
            raise argparse.ArgumentTypeError(f"{what}: one or more of {', '.join(allowed)} (not {', '.join(wrong)})")
        return names
    return parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=parse_sizes, default=[SIZES["small"]],
                        help="comma-separated sizes: small (1000x20000), wide (5000x20000), large (5000x150000) "
                             "or NODESxPODS (default: small)")
    parser.add_argument("--nodes", type=int, help="one size: this many nodes (with --pods; instead of --sizes)")
    parser.add_argument("--pods", type=int, help="one size: this many pods in all (with --nodes)")
    parser.add_argument("--formats", type=_names(list(FORMATS), "--formats"), default=["yaml", "json"],
                        help="comma-separated: yaml, json, jsonl (default: yaml,json)")
    parser.add_argument("--commands", type=_names(COMMANDS, "--commands"), default=list(COMMANDS),
                        help=f"comma-separated: {', '.join(COMMANDS)} (default: all)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds a command may run (default 900)")
    parser.add_argument("--max-rss", type=float, default=round(memory_mib() * 0.85 / 1024, 1), metavar="GIB",
                        help="kill a command whose RSS passes this (default: 85%% of the machine's memory)")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep the dumps here and use them again next time")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cloud", choices=sorted(CLOUDS), default="eks", help="node names and pools as on this cloud")
    parser.add_argument("--generate-only", action="store_true", help="write the dumps (to --keep) and stop")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON here (- for standard output)")
    args = parser.parse_args(argv)
    if (args.nodes is None) != (args.pods is None):
        parser.error("--nodes and --pods go together")
    sizes = [(args.nodes, args.pods)] if args.nodes is not None else args.sizes
    log: Callable[[str], None] = (lambda text: print(text, file=sys.stderr, flush=True)) if args.json == "-" \
        else (lambda text: print(text, flush=True))
    with tempfile.TemporaryDirectory(prefix="kubesched-dumps-") as scratch:
        directory = args.keep or Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        dumps: list[Obj] = []
        runs: list[Run] = []
        metas: list[Obj] = []
        for nodes, pods in sizes:
            without = bool(WITHOUT_COMMANDS & set(args.commands))
            meta, rows = ensure_dumps(directory, nodes, pods, args.formats, seed=args.seed, cloud=args.cloud,
                                      without=without, log=log)
            metas.append(meta)
            dumps += rows
            log(f"{nodes} x {pods}: explain {meta['explain_pod']} and the preemptor {meta['preemptor_pod']} "
                f"({meta['counts']['preemptor pods']} of {meta['counts']['preemptor cpu millicores']}m CPU; "
                f"{meta['counts']['pdbs']} PDBs, {meta['counts']['pdbs allowing none']} allowing no disruption), "
                f"drain {meta['drain_node']} ({meta['drain_node_pods']} pods), "
                f"{meta['requested_cpu_share']:.0%} of the CPU requested")
            if args.generate_only:
                continue
            for row in rows:
                runs += run_commands(row["size"], row["format"], Path(row["path"]), meta, args.commands, args.timeout,
                                     args.max_rss * 1024, log)
    if not args.generate_only:
        log("")
        log(table(dumps, runs))
    if args.json:
        document = {"dumps": dumps, "runs": [asdict(r) for r in runs], "clusters": metas}
        text = json.dumps(document, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n")
    return 0 if all(r.status == "ok" for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
