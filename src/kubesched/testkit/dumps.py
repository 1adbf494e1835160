"""Cluster dumps as kubectl writes them, for tests of snapshot input.

``kubectl get nodes,pods,pdb,priorityclasses,resourcequotas -A -o yaml`` prints one ``v1 List`` whose
items come in the order of the command's arguments (all nodes, then all pods, ...), each item with
what the API server stored: ``uid``, ``resourceVersion``, ``creationTimestamp``, ``managedFields``,
the fields admission and defaulting added (pod ``priority``, default tolerations, the service account
token volume, ``dnsPolicy``, ...), ``ownerReferences`` and ``status``. :class:`ClusterDump` builds such
dumps from a short description of the cluster: nodes, Deployments (with their ReplicaSet and pods),
StatefulSets, DaemonSets, bare pods, PDBs and classes, placed and timestamped as a real cluster would
show them. :meth:`ClusterDump.write` writes one out as kubectl prints it (``-o yaml``: keys sorted,
2-space block style; ``-o json``: 4-space indent) or as JSON Lines (one item a line).
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import yaml

Obj = dict[str, Any]

#: when the dump is "taken" (every timestamp is before it)
TAKEN_AT = datetime(2026, 11, 20, 9, 30, 0, tzinfo=UTC)
SYSTEM_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
#: the formats :meth:`ClusterDump.write` writes, with their file suffixes
FORMATS = {"yaml": ".yaml", "json": ".json", "jsonl": ".jsonl"}
#: what admission (DefaultTolerationSeconds) adds to a pod that does not tolerate these taints already
DEFAULT_TOLERATIONS: list[Obj] = [
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}]
#: what the DaemonSet controller adds to its pods' tolerations
DAEMONSET_TOLERATIONS: list[Obj] = [
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists"},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/disk-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/memory-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/pid-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]
#: list fields whose items managedFields names by key (``k:{"name":"app"}``); other lists are atomic
_MERGE_KEYS = {"containers": ("name",), "initContainers": ("name",), "volumes": ("name",),
               "volumeMounts": ("mountPath",), "ports": ("containerPort", "protocol"), "env": ("name",),
               "conditions": ("type",), "ownerReferences": ("uid",), "podIPs": ("ip",), "hostIPs": ("ip",)}
#: fields whose managedFields entry lists the children only (no ``.``)
_BARE_FIELDS = frozenset({"metadata", "spec", "status", "template"})


@functools.lru_cache(maxsize=1 << 16)
def _ts(minutes_before: float) -> str:
    return (TAKEN_AT - timedelta(minutes=minutes_before)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _uid(*parts: str) -> str:
    h = hashlib.sha1("/".join(parts).encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def _hash(*parts: str) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    h = int(hashlib.sha1("/".join(parts).encode()).hexdigest(), 16)
    out = ""
    for _ in range(10):
        h, r = divmod(h, len(alphabet))
        out += alphabet[r]
    return out


def _suffix(taken: set[str], *parts: str) -> str:
    """The 5-character name suffix a controller picks for ``parts``, picked again (as the controller
    retries a name that exists) until it is not in ``taken``; it is added to ``taken``."""
    suffix, attempt = _hash(*parts)[:5], 0
    while suffix in taken:
        attempt += 1
        suffix = _hash(*parts, str(attempt))[:5]
    taken.add(suffix)
    return suffix


def fit_message(total: int, reasons: dict[str, int], preemption: dict[str, int] | str | None) -> str:
    """kube-scheduler's message on a pod no node takes (upstream ``FitError.Error``): its reasons
    counted and sorted as it sorts them, then what its PostFilter said: ``preemption``, the reasons
    counted for the dry runs or the whole text after ``preemption: ``; None for a scheduler that runs
    no PostFilter plugin (DefaultPreemption disabled), whose messages have no ``preemption:`` clause."""
    def counted(found: dict[str, int]) -> str:
        return ", ".join(sorted(f"{n} {reason}" for reason, n in found.items() if n))
    message = f"0/{total} nodes are available: {counted(reasons)}."
    if preemption is None:
        return message
    tail = preemption if isinstance(preemption, str) else f"0/{total} nodes are available: {counted(preemption)}."
    return f"{message} preemption: {tail}"


def _managed(manager: str, operation: str, minutes_before: float, api_version: str = "v1") -> list[Obj]:
    return [{"apiVersion": api_version, "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {}}},
             "manager": manager, "operation": operation, "time": _ts(minutes_before)}]


def fields_v1(obj: Obj) -> Obj:
    """The ``fieldsV1`` set of every field in ``obj``, as a managedFields entry lists what its manager
    set: ``f:name`` per field, ``k:{...}`` per keyed list item, ``.`` for a map owned as a whole."""
    out: Obj = {}
    for key, value in obj.items():
        if isinstance(value, dict) and value:
            inner = fields_v1(value)
            out[f"f:{key}"] = inner if key in _BARE_FIELDS else {".": {}, **inner}
        elif isinstance(value, list) and value and key in _MERGE_KEYS and all(isinstance(v, dict) for v in value):
            names = _MERGE_KEYS[key]
            out[f"f:{key}"] = {"k:" + json.dumps({n: item.get(n) for n in names}, separators=(",", ":")):
                               {".": {}, **fields_v1(item)} for item in value}
        else:
            out[f"f:{key}"] = {}
    return out


def _entry(manager: str, fields: Obj, minutes_before: float, subresource: str | None = None) -> Obj:
    entry: Obj = {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields, "manager": manager,
                  "operation": "Update"}
    if subresource:
        entry["subresource"] = subresource
    entry["time"] = _ts(minutes_before)
    return entry


def _tolerates(tolerations: list[Obj], taint: Obj) -> bool:
    return any((t.get("key") == taint["key"] or (not t.get("key") and t.get("operator") == "Exists"))
               and t.get("effect") in (None, "", taint["effect"]) for t in tolerations)


def with_tolerations(tolerations: list[Obj], added: list[Obj]) -> list[Obj]:
    """``tolerations`` and those of ``added`` whose taints they do not tolerate yet, as admission
    and the DaemonSet controller add theirs."""
    return [*tolerations, *(t for t in added if not _tolerates(tolerations, t))]


def _qos(resources: Obj) -> str:
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    if not requests and not limits:
        return "BestEffort"
    if all(limits.get(r) is not None and requests.get(r, limits[r]) == limits[r] for r in ("cpu", "memory")):
        return "Guaranteed"
    return "Burstable"


class _KubectlYaml(yaml.CSafeDumper if hasattr(yaml, "CSafeDumper") else yaml.SafeDumper):  # type: ignore[misc]
    """kubectl never writes anchors: an object shared between items is written out at each place."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_PLAIN = re.compile(r"[A-Za-z0-9._/][A-Za-z0-9._/:{}\[\]\",=+@-]*")
_STR_TAG = "tag:yaml.org,2002:str"
_RESOLVER = yaml.resolver.Resolver()
#: PyYAML's line width: a scalar with spaces that would reach past it may be folded
_WIDTH = 80


class _Fallback(Exception):
    """An item that :func:`yaml_item` cannot write byte for byte as PyYAML does."""


@functools.lru_cache(maxsize=1 << 12)
def _pyyaml_scalar(value: str) -> str | None:
    """How PyYAML writes ``value`` in a block sequence, if on one line and not double-quoted."""
    text = yaml.dump([value], Dumper=_KubectlYaml, default_flow_style=False)
    if not text.startswith("- ") or text.count("\n") != 1 or text[2] == '"':
        return None
    return text[2:-1]


def _scalar(value: Any, column: int) -> str:
    """``value`` as PyYAML writes a scalar that starts at ``column``."""
    if isinstance(value, str):
        if _PLAIN.fullmatch(value) and not value.endswith(":") and not value.startswith("..."):
            if _RESOLVER.resolve(yaml.ScalarNode, value, (True, False)) == _STR_TAG:
                return value
            return f"'{value}'"
        text = _pyyaml_scalar(value)
        if text is None or (" " in value and column + len(text) > _WIDTH):
            raise _Fallback
        return text
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    raise _Fallback


def _yaml_mapping(obj: Obj, indent: int, out: list[str], first: str | None = None) -> None:
    """A non-empty block mapping at ``indent``; ``first``: the prefix of its first line (``- `` of the
    sequence item it opens) instead of the indentation."""
    pad = " " * indent
    for key, value in sorted(obj.items()):
        if not isinstance(key, str) or not key:
            raise _Fallback
        name = _scalar(key, indent)
        if len(name) >= 128:  # PyYAML writes a long key as a complex key
            raise _Fallback
        head = f"{first if first is not None else pad}{name}:"
        first = None
        if isinstance(value, dict):
            if value:
                out.append(head + "\n")
                _yaml_mapping(value, indent + 2, out)
            else:
                out.append(head + " {}\n")
        elif isinstance(value, list):
            if value:
                out.append(head + "\n")
                _yaml_sequence(value, indent, out)
            else:
                out.append(head + " []\n")
        else:
            out.append(f"{head} {_scalar(value, len(head) + 1)}\n")


def _yaml_sequence(items: list[Any], indent: int, out: list[str]) -> None:
    """A non-empty block sequence whose dashes are at ``indent``."""
    dash = " " * indent + "- "
    for value in items:
        if isinstance(value, dict):
            if value:
                _yaml_mapping(value, indent + 2, out, first=dash)
            else:
                out.append(dash + "{}\n")
        elif isinstance(value, list):
            if value:
                raise _Fallback
            out.append(dash + "[]\n")
        else:
            out.append(f"{dash}{_scalar(value, indent + 2)}\n")


def yaml_item(item: Obj) -> str:
    """``item`` as an entry of the List's ``items`` (``- apiVersion: ...``), the same text PyYAML
    writes (keys sorted, block style, no anchors), several times faster."""
    out: list[str] = []
    try:
        _yaml_sequence([item], 0, out)
    except _Fallback:
        return yaml.dump([item], Dumper=_KubectlYaml, sort_keys=True, default_flow_style=False)
    return "".join(out)


def write_items(items: Sequence[Obj], out: IO[str], fmt: str) -> None:
    """Write ``items`` as one ``v1 List`` the way ``kubectl get ... -o yaml`` (``fmt`` yaml) or
    ``-o json`` (json) prints it, or one item a line (jsonl): the bytes of ``yaml.dump(the_list,
    sort_keys=True)`` (without anchors) and of ``json.dump(the_list, indent=4, sort_keys=True)``
    and a newline, written an item at a time."""
    if fmt == "yaml":
        out.write("apiVersion: v1\nitems:\n" if items else "apiVersion: v1\nitems: []\n")
        for item in items:
            out.write(yaml_item(item))
        out.write("kind: List\nmetadata:\n  resourceVersion: ''\n")
    elif fmt == "json":
        out.write('{\n    "apiVersion": "v1",\n    "items": [')
        for i, item in enumerate(items):
            text = json.dumps(item, indent=4, sort_keys=True, ensure_ascii=False).replace("\n", "\n        ")
            out.write(("," if i else "") + "\n        " + text)
        out.write(("\n    " if items else "") + '],\n    "kind": "List",\n    "metadata": {\n'
                  '        "resourceVersion": ""\n    }\n}\n')
    elif fmt == "jsonl":
        for item in items:
            out.write(json.dumps(item, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n")
    else:
        raise ValueError(f"unknown dump format {fmt!r} (one of {', '.join(FORMATS)})")


@dataclass
class ClusterDump:
    """A cluster, described briefly, written out as kubectl would print it."""

    nodes: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    pdbs: list[Obj] = field(default_factory=list)
    classes: list[Obj] = field(default_factory=list)
    quotas: list[Obj] = field(default_factory=list)
    workloads: list[Obj] = field(default_factory=list)  # deploy, rs, sts, ds in kubectl's order
    storage: list[Obj] = field(default_factory=list)  # sc, pv, pvc (appended to the command when present)
    _rv: int = 1000
    #: per node: its InternalIP, its pod CIDR's first address and the pod IPs handed out so far
    _network: dict[str, list[Any]] = field(default_factory=dict)

    def _meta(self, name: str, *, namespace: str | None = None, minutes_before: float = 600,
              labels: dict[str, str] | None = None, manager: str = "kubectl-client-side-apply",
              api_version: str = "v1", kind: str = "") -> Obj:
        self._rv += 7
        meta: Obj = {"creationTimestamp": _ts(minutes_before)}
        if labels:
            meta["labels"] = dict(labels)
        meta["managedFields"] = _managed(manager, "Update", minutes_before, api_version)
        meta["name"] = name
        if namespace is not None:
            meta["namespace"] = namespace
        meta["resourceVersion"] = str(self._rv)
        meta["uid"] = _uid(kind, namespace or "", name)
        return meta

    # -- nodes -------------------------------------------------------------------------------------
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
                               "timeAdded": _ts(30)})
        if all_taints:
            spec["taints"] = all_taints
        ready = {"lastHeartbeatTime": _ts(1), "lastTransitionTime": _ts(20000), "message": "kubelet is posting ready status",
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
                         "machineID": _hash(name, "machine") * 3, "operatingSystem": "linux",
                         "osImage": "Debian GNU/Linux 12", "bootID": _uid("boot", name),
                         "systemUUID": _uid("system", name)}}}
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

    # -- pods ----------------------------------------------------------------------------------------
    def pod(self, name: str, namespace: str = "default", *, node: str | None, cpu: str = "100m",
            memory: str = "128Mi", labels: dict[str, str] | None = None, owner: Obj | None = None,
            priority_class: str | None = None, priority: int = 0, minutes_before: float = 300,
            phase: str | None = None, spec_extra: Obj | None = None, uid: str | None = None,
            preemption_policy: str = "PreemptLowerPriority", resources: Obj | None = None,
            container_extra: Obj | None = None, image: str = "registry.k8s.io/pause:3.9",
            message: str | None = None) -> Obj:
        """A pod; ``node=None`` for a pending one (``message``: kube-scheduler's on its PodScheduled
        condition). ``owner``: the controlling object (its kind, name, uid). ``resources``: the
        container's (default: requests of ``cpu`` and ``memory``); ``container_extra``: more container
        fields (ports, probes, ...). Tolerations in ``spec_extra`` get the default ones added."""
        meta = self._meta(name, namespace=namespace, minutes_before=minutes_before, labels=labels,
                          manager="kube-controller-manager" if owner else "kubectl-create", kind="Pod")
        if uid is not None:
            meta["uid"] = uid
        if owner is not None:
            if owner["kind"] != "StatefulSet":  # a StatefulSet names its pods itself
                meta["generateName"] = owner["metadata"]["name"] + "-"
            meta["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "blockOwnerDeletion": True,
                                        "controller": True, "kind": owner["kind"],
                                        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}]
        token = f"kube-api-access-{_hash(namespace, name)[:5]}"
        container: Obj = {"image": image, "imagePullPolicy": "IfNotPresent", "name": "app",
                          "resources": resources if resources is not None else {"requests": {"cpu": cpu, "memory": memory}},
                          "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                          **(container_extra or {})}
        sent: Obj = {"containers": [dict(sorted(container.items()))],
                     "dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "restartPolicy": "Always",
                     "schedulerName": "default-scheduler", "securityContext": {}, "terminationGracePeriodSeconds": 30}
        if priority_class:
            sent["priorityClassName"] = priority_class
        sent.update(spec_extra or {})
        creator_fields = fields_v1({"metadata": {k: meta[k] for k in ("generateName", "labels", "ownerReferences")
                                                 if k in meta}, "spec": sent})
        container["volumeMounts"] = [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                      "name": token, "readOnly": True}]
        spec: Obj = {
            **sent,
            "containers": [container],
            "preemptionPolicy": preemption_policy, "priority": priority,
            "serviceAccount": "default", "serviceAccountName": "default",
            "tolerations": with_tolerations(list(sent.get("tolerations") or []), DEFAULT_TOLERATIONS),
            "volumes": [{"name": token, "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                            "path": "namespace"}]}}]}}],
        }
        spec.update({k: v for k, v in (spec_extra or {}).items() if k != "tolerations"})
        if node:
            spec["nodeName"] = node
        created = _ts(minutes_before)
        qos = _qos(container["resources"])
        if node:
            started = _ts(minutes_before - 0.1)
            host_ip, pod_ip = self._addresses(node)
            image_id = image.rsplit(":", 1)[0] + "@sha256:" + hashlib.sha256(image.encode()).hexdigest()
            status: Obj = {
                "conditions": [
                    {"lastProbeTime": None, "lastTransitionTime": created, "status": "True", "type": "Initialized"},
                    {"lastProbeTime": None, "lastTransitionTime": started, "status": "True", "type": "Ready"},
                    {"lastProbeTime": None, "lastTransitionTime": started, "status": "True", "type": "ContainersReady"},
                    {"lastProbeTime": None, "lastTransitionTime": created, "status": "True", "type": "PodScheduled"}],
                "containerStatuses": [{"containerID": "containerd://" + _hash(name, "c") * 6, "image": image,
                                       "imageID": image_id, "lastState": {}, "name": container["name"],
                                       "ready": True, "restartCount": 0, "started": True,
                                       "state": {"running": {"startedAt": started}}}],
                "hostIP": host_ip, "phase": phase or "Running", "podIP": pod_ip,
                "podIPs": [{"ip": pod_ip}], "qosClass": qos, "startTime": created}
            status_entry = _entry("kubelet", fields_v1({"status": {k: v for k, v in status.items() if k != "qosClass"}}),
                                  minutes_before - 0.1, "status")
        else:
            scheduled = {"lastProbeTime": None, "lastTransitionTime": created,
                         "message": message or "0/3 nodes are available: 3 Insufficient cpu.",
                         "reason": "Unschedulable", "status": "False", "type": "PodScheduled"}
            status = {"conditions": [scheduled], "phase": phase or "Pending", "qosClass": qos}
            status_entry = _entry("kube-scheduler", fields_v1({"status": {"conditions": [scheduled]}}),
                                  minutes_before, "status")
        meta["managedFields"] = [_entry(meta["managedFields"][0]["manager"], creator_fields, minutes_before),
                                 status_entry]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": dict(sorted(spec.items())),
               "status": status}
        self.pods.append(pod)
        return pod

    @staticmethod
    def _template_spec(cpu: str, memory: str, resources: Obj | None, container_extra: Obj | None, image: str,
                       priority_class: str | None, template_extra: Obj | None, name: str = "app") -> Obj:
        container = {"image": image, "imagePullPolicy": "IfNotPresent", "name": name,
                     "resources": resources if resources is not None else {"requests": {"cpu": cpu, "memory": memory}},
                     "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                     **(container_extra or {})}
        spec: Obj = {"containers": [container], "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
                     "schedulerName": "default-scheduler", "securityContext": {}, "terminationGracePeriodSeconds": 30}
        if priority_class:
            spec["priorityClassName"] = priority_class
        spec.update(template_extra or {})
        return spec

    def deployment(self, name: str, replicas: int, nodes: list[str | None], namespace: str = "default", *,
                   cpu: str = "100m", memory: str = "128Mi", priority_class: str | None = None, priority: int = 0,
                   include_workloads: bool = True, template_extra: Obj | None = None,
                   preemption_policy: str = "PreemptLowerPriority", resources: Obj | None = None,
                   container_extra: Obj | None = None, image: str = "registry.k8s.io/pause:3.9",
                   pending_message: str | None = None) -> tuple[Obj, Obj, list[Obj]]:
        """A Deployment, its current ReplicaSet and one pod per entry of ``nodes`` (None: pending,
        with ``pending_message`` as kube-scheduler's). ``resources``, ``container_extra``: as :meth:`pod`."""
        labels = {"app": name}
        template_spec = self._template_spec(cpu, memory, resources, container_extra, image, priority_class,
                                            template_extra)
        ready = sum(1 for n in nodes if n)
        dep_meta = self._meta(name, namespace=namespace, minutes_before=900, labels=labels,
                              api_version="apps/v1", kind="Deployment")
        dep_meta["annotations"] = {"deployment.kubernetes.io/revision": "1"}
        dep_meta["generation"] = 1
        dep_status: Obj = {"availableReplicas": ready, "observedGeneration": 1, "readyReplicas": ready,
                           "replicas": len(nodes), "updatedReplicas": len(nodes)}
        if ready < len(nodes):
            dep_status["unavailableReplicas"] = len(nodes) - ready
        if not ready:
            for key in ("availableReplicas", "readyReplicas"):
                del dep_status[key]
        deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": dep_meta, "spec": {
            "progressDeadlineSeconds": 600, "replicas": replicas, "revisionHistoryLimit": 10,
            "selector": {"matchLabels": labels},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"},
            "template": {"metadata": {"creationTimestamp": None, "labels": labels}, "spec": template_spec}},
            "status": dep_status}
        h = _hash(namespace, name)
        rs_labels = {**labels, "pod-template-hash": h}
        rs_meta = self._meta(f"{name}-{h}", namespace=namespace, minutes_before=900, labels=rs_labels,
                             manager="kube-controller-manager", api_version="apps/v1", kind="ReplicaSet")
        rs_meta["annotations"] = {"deployment.kubernetes.io/desired-replicas": str(replicas),
                                  "deployment.kubernetes.io/max-replicas": str(replicas + 1),
                                  "deployment.kubernetes.io/revision": "1"}
        rs_meta["ownerReferences"] = [{"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True,
                                       "kind": "Deployment", "name": name, "uid": dep_meta["uid"]}]
        rs_status: Obj = {"availableReplicas": ready, "fullyLabeledReplicas": len(nodes), "observedGeneration": 1,
                          "readyReplicas": ready, "replicas": len(nodes)}
        if not ready:
            for key in ("availableReplicas", "readyReplicas"):
                del rs_status[key]
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": rs_meta, "spec": {
            "replicas": replicas, "selector": {"matchLabels": rs_labels},
            "template": {"metadata": {"creationTimestamp": None, "labels": rs_labels}, "spec": template_spec}},
            "status": rs_status}
        pods = []
        taken: set[str] = set()
        extra = {k: v for k, v in template_spec.items() if k not in ("containers", "priorityClassName")}
        container = template_spec["containers"][0]
        for i, node in enumerate(nodes):
            pod_name = f"{name}-{h}-{_suffix(taken, name, str(i))}"
            pods.append(self.pod(pod_name, namespace, node=node, cpu=cpu, memory=memory, labels=rs_labels, owner=rs,
                                 priority_class=priority_class, priority=priority, minutes_before=800 - i % 600,
                                 spec_extra=extra, preemption_policy=preemption_policy,
                                 resources=container["resources"], container_extra=container_extra, image=image,
                                 message=pending_message))
        if include_workloads:
            self.workloads.extend([deployment, rs])
        return deployment, rs, pods

    def statefulset(self, name: str, nodes: list[str | None], namespace: str = "default", *,
                    cpu: str = "100m", memory: str = "128Mi", priority_class: str | None = None, priority: int = 0,
                    template_extra: Obj | None = None, resources: Obj | None = None,
                    container_extra: Obj | None = None, image: str = "registry.k8s.io/pause:3.9",
                    service_name: str | None = None, pending_message: str | None = None) -> tuple[Obj, list[Obj]]:
        """A StatefulSet and its pods ``name-0`` .. ``name-<n-1>``, one per entry of ``nodes`` (None:
        pending), labelled and named by ordinal as its controller makes them."""
        labels = {"app": name}
        template_spec = self._template_spec(cpu, memory, resources, container_extra, image, priority_class,
                                            template_extra)
        replicas, ready = len(nodes), sum(1 for n in nodes if n)
        meta = self._meta(name, namespace=namespace, minutes_before=950, labels=labels,
                          api_version="apps/v1", kind="StatefulSet")
        meta["generation"] = 1
        revision = f"{name}-{_hash(namespace, name, 'revision')}"
        status: Obj = {"availableReplicas": ready, "collisionCount": 0, "currentReplicas": replicas,
                       "currentRevision": revision, "observedGeneration": 1, "readyReplicas": ready,
                       "replicas": replicas, "updateRevision": revision, "updatedReplicas": replicas}
        if not ready:
            del status["readyReplicas"]
        sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta, "spec": {
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            "podManagementPolicy": "OrderedReady", "replicas": replicas, "revisionHistoryLimit": 10,
            "selector": {"matchLabels": labels}, "serviceName": service_name or name,
            "template": {"metadata": {"creationTimestamp": None, "labels": labels}, "spec": template_spec},
            "updateStrategy": {"rollingUpdate": {"partition": 0}, "type": "RollingUpdate"}},
            "status": status}
        extra = {k: v for k, v in template_spec.items() if k not in ("containers", "priorityClassName")}
        pods = []
        for i, node in enumerate(nodes):
            pod_name = f"{name}-{i}"
            pod_labels = {**labels, "apps.kubernetes.io/pod-index": str(i), "controller-revision-hash": revision,
                          "statefulset.kubernetes.io/pod-name": pod_name}
            pods.append(self.pod(pod_name, namespace, node=node, cpu=cpu, memory=memory, labels=pod_labels,
                                 owner=sts, priority_class=priority_class, priority=priority,
                                 minutes_before=940 - i % 600,
                                 spec_extra={**extra, "hostname": pod_name, "subdomain": service_name or name},
                                 resources=template_spec["containers"][0]["resources"],
                                 container_extra=container_extra, image=image, message=pending_message))
        self.workloads.append(sts)
        return sts, pods

    def daemonset_pods(self, name: str, namespace: str = "kube-system", *, cpu: str = "100m",
                       memory: str = "64Mi", resources: Obj | None = None, image: str = "registry.k8s.io/pause:3.9",
                       priority_class: str = "system-node-critical") -> Obj:
        """A DaemonSet with one running pod per node (node-affinity pinned, as its controller writes it)."""
        labels = {"k8s-app": name}
        meta = self._meta(name, namespace=namespace, minutes_before=20000, labels=labels,
                          api_version="apps/v1", kind="DaemonSet")
        meta["annotations"] = {"deprecated.daemonset.template.generation": "1"}
        meta["generation"] = 1
        template_spec = self._template_spec(cpu, memory, resources, None, image, priority_class,
                                            {"tolerations": [{"operator": "Exists"}]}, name="agent")
        ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta, "spec": {
            "revisionHistoryLimit": 10, "selector": {"matchLabels": labels},
            "template": {"metadata": {"creationTimestamp": None, "labels": labels}, "spec": template_spec},
            "updateStrategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}, "type": "RollingUpdate"}},
            "status": {"currentNumberScheduled": len(self.nodes), "desiredNumberScheduled": len(self.nodes),
                       "numberAvailable": len(self.nodes), "numberMisscheduled": 0, "numberReady": len(self.nodes),
                       "observedGeneration": 1, "updatedNumberScheduled": len(self.nodes)}}
        priority = SYSTEM_CLASSES.get(priority_class, 0)
        taken: set[str] = set()
        tolerations = [{"operator": "Exists"}, *DAEMONSET_TOLERATIONS]
        container = template_spec["containers"][0]
        for node in self.nodes:
            node_name = node["metadata"]["name"]
            affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}}
            self.pod(f"{name}-{_suffix(taken, name, node_name)}", namespace, node=node_name, cpu=cpu, memory=memory,
                     labels={**labels, "controller-revision-hash": "6d4b7c", "pod-template-generation": "1"},
                     owner=ds, priority_class=priority_class, priority=priority, minutes_before=19000,
                     spec_extra={"affinity": affinity, "tolerations": tolerations}, resources=container["resources"],
                     container_extra={"name": "agent"}, image=image)
        self.workloads.append(ds)
        return ds

    # -- policy objects -------------------------------------------------------------------------------
    def priority_class(self, name: str, value: int, *, preemption_policy: str = "PreemptLowerPriority",
                       global_default: bool = False) -> Obj:
        meta = self._meta(name, minutes_before=30000, api_version="scheduling.k8s.io/v1", kind="PriorityClass")
        pc: Obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": meta,
                   "preemptionPolicy": preemption_policy, "value": value}
        if global_default:
            pc["globalDefault"] = True
        self.classes.append(pc)
        return pc

    def system_classes(self) -> None:
        """The two classes every cluster has (and every dump of priorityclasses lists)."""
        for name, value in SYSTEM_CLASSES.items():
            meta = self._meta(name, minutes_before=40000, api_version="scheduling.k8s.io/v1", kind="PriorityClass")
            self.classes.append({"apiVersion": "scheduling.k8s.io/v1", "description": "Used for system critical pods "
                                 "that must run in the cluster, but can be moved to another node if necessary.",
                                 "kind": "PriorityClass", "metadata": meta, "preemptionPolicy": "PreemptLowerPriority",
                                 "value": value})

    def pdb(self, name: str, namespace: str, selector: dict[str, str], *, min_available: int | str | None = None,
            max_unavailable: int | str | None = None, allowed: int = 0, healthy: int = 0, expected: int = 0) -> Obj:
        meta = self._meta(name, namespace=namespace, minutes_before=850, api_version="policy/v1",
                          kind="PodDisruptionBudget")
        meta["generation"] = 1
        spec: Obj = {"selector": {"matchLabels": selector}}
        if min_available is not None:
            spec["minAvailable"] = min_available
        if max_unavailable is not None:
            spec["maxUnavailable"] = max_unavailable
        pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta, "spec": spec,
               "status": {"conditions": [{"lastTransitionTime": _ts(800), "message": "", "observedGeneration": 1,
                                          "reason": "SufficientPods" if allowed else "InsufficientPods",
                                          "status": "True" if allowed else "False", "type": "DisruptionAllowed"}],
                          "currentHealthy": healthy, "desiredHealthy": healthy - allowed,
                          "disruptionsAllowed": allowed, "expectedPods": expected, "observedGeneration": 1}}
        self.pdbs.append(pdb)
        return pdb

    # -- storage ------------------------------------------------------------------------------------
    def storage_class(self, name: str, provisioner: str = "pd.csi.storage.gke.io", *, default: bool = False,
                      binding: str = "WaitForFirstConsumer") -> Obj:
        meta = self._meta(name, minutes_before=30000, api_version="storage.k8s.io/v1", kind="StorageClass")
        if default:
            meta["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
        sc = {"allowVolumeExpansion": True, "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
              "metadata": meta, "parameters": {"type": "pd-balanced"}, "provisioner": provisioner,
              "reclaimPolicy": "Delete", "volumeBindingMode": binding}
        self.storage.append(sc)
        return sc

    def bound_claim(self, name: str, namespace: str = "default", *, storage_class: str, zone: str,
                    node: str, size: str = "10Gi", provisioner: str = "pd.csi.storage.gke.io") -> tuple[Obj, Obj]:
        """A claim provisioned for ``node`` and its volume in ``zone``, both Bound, as the PV controller
        and the provisioner leave them."""
        cmeta = self._meta(name, namespace=namespace, minutes_before=900, kind="PersistentVolumeClaim",
                           manager="kube-controller-manager")
        volume_name = f"pvc-{cmeta['uid']}"
        cmeta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
                                "volume.beta.kubernetes.io/storage-provisioner": provisioner,
                                "volume.kubernetes.io/selected-node": node,
                                "volume.kubernetes.io/storage-provisioner": provisioner}
        cmeta["finalizers"] = ["kubernetes.io/pvc-protection"]
        claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": cmeta,
                 "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}},
                          "storageClassName": storage_class, "volumeMode": "Filesystem", "volumeName": volume_name},
                 "status": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": size}, "phase": "Bound"}}
        vmeta = self._meta(volume_name, minutes_before=899, kind="PersistentVolume", manager="csi-provisioner")
        vmeta["annotations"] = {"pv.kubernetes.io/provisioned-by": provisioner,
                                "volume.kubernetes.io/provisioner-deletion-secret-name": "",
                                "volume.kubernetes.io/provisioner-deletion-secret-namespace": ""}
        vmeta["finalizers"] = ["kubernetes.io/pv-protection", "external-provisioner.volume.kubernetes.io/finalizer"]
        volume = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": vmeta, "spec": {
            "accessModes": ["ReadWriteOnce"], "capacity": {"storage": size},
            "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": name, "namespace": namespace,
                         "resourceVersion": cmeta["resourceVersion"], "uid": cmeta["uid"]},
            "csi": {"driver": provisioner, "fsType": "ext4",
                    "volumeAttributes": {"storage.kubernetes.io/csiProvisionerIdentity": "1700000000000-0-" + provisioner},
                    "volumeHandle": f"projects/p/zones/{zone}/disks/{volume_name}"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]}},
            "persistentVolumeReclaimPolicy": "Delete", "storageClassName": storage_class, "volumeMode": "Filesystem"},
            "status": {"lastPhaseTransitionTime": _ts(899), "phase": "Bound"}}
        self.storage.extend([volume, claim])
        return claim, volume

    # -- output ---------------------------------------------------------------------------------------
    def sort(self) -> None:
        """Each kind's objects in the order the API server lists them (and kubectl prints them): by
        namespace, then name."""
        for objects in (self.nodes, self.pods, self.pdbs, self.classes, self.quotas, self.workloads, self.storage):
            objects.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))

    def items(self, *, with_workloads: bool = False) -> list[Obj]:
        """The List's items, in the order kubectl prints them (see :meth:`as_list`)."""
        return self.as_list(with_workloads=with_workloads)["items"]

    def write(self, path: str | Path, fmt: str | None = None, *, with_workloads: bool = True) -> Path:
        """Write the dump to ``path`` as kubectl prints it (``fmt``: yaml, json or jsonl; default:
        from the file's suffix); with the workloads (``deploy,rs,sts,ds``) unless told not to."""
        path = Path(path)
        if fmt is None:
            fmt = next((f for f, suffix in FORMATS.items() if path.suffix == suffix), "yaml")
        with path.open("w", encoding="utf-8") as out:
            write_items(self.items(with_workloads=with_workloads), out, fmt)
        return path

    def as_list(self, *, with_workloads: bool = False) -> Obj:
        """``kubectl get nodes,pods,pdb,priorityclasses,resourcequotas -A -o yaml`` (``with_workloads``: with
        ``deploy,rs,sts,ds`` appended to the command; ``sc,pv,pvc`` appended when there are storage objects)."""
        items = [*self.nodes, *self.pods, *self.pdbs, *self.classes, *self.quotas]
        if with_workloads:
            kinds = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")
            items += sorted(self.workloads, key=lambda o: kinds.index(o["kind"]))
        if self.storage:  # ``sc,pv,pvc`` at the end of the command
            order = ("StorageClass", "PersistentVolume", "PersistentVolumeClaim")
            items += sorted(self.storage, key=lambda o: order.index(o["kind"]))
        return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def small_eks_cluster() -> tuple[ClusterDump, list[str]]:
    """A small EKS cluster: managed node groups ``general`` (3 nodes) and ``gpu`` (1, tainted),
    DaemonSet pods, the system PriorityClasses, a Deployment ``shop/api`` of 3 on the general nodes and
    one ``batch/etl`` pod left pending (no general node has its 3 cpu free). Returns the dump and
    the general group's node names."""
    dump = ClusterDump()
    general = [n["metadata"]["name"] for n in dump.eks_nodegroup("general", 3)]
    dump.eks_nodegroup("gpu", 1, taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])
    dump.daemonset_pods("aws-node")
    dump.system_classes()
    dump.deployment("api", 3, general, namespace="shop", cpu="2")
    dump.deployment("etl", 1, [None], namespace="batch", cpu="3")
    return dump, general
