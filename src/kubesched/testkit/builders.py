"""Builders for the API objects tests, benchmarks and demos feed to kubesched: one per kind.

Each builder writes only the fields it is given (plus the few a kind always carries), so a test
states exactly the object it means. ``None`` leaves a field out; an empty dict or list given
explicitly is written as such. Test areas whose objects share other defaults (no requests, no
namespace, another container name) wrap these builders in their conftest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubesched.k8s.kinds import api_version
from kubesched.k8s.objects import POD_GROUP_LABEL
from kubesched.topology import numaplacement

Obj = dict[str, Any]

PAUSE: Final = "registry.k8s.io/pause:3.9"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
USAGE_ANNOTATION: Final = "kubesched.io/usage"

SAME_AS_ALLOCATABLE: Final = "same-as-allocatable"
"""``make_node(capacity=...)`` default: report a capacity equal to the allocatable amounts."""


def duration(value: float | str) -> str:
    """A scenario duration: whole seconds as ``"5s"``, fractions as milliseconds; strings pass through."""
    if isinstance(value, str):
        return value
    if float(value).is_integer():
        return f"{int(value)}s"
    return f"{int(round(value * 1000))}ms"


# -- nodes ---------------------------------------------------------------------------------------------
def make_node(name: str, cpu: str | None = "4", memory: str | None = "32Gi", pods: int | str | None = 110,
              labels: Mapping[str, str] | None = None, *, hostname: bool = True,
              allocatable: Mapping[str, Any] | None = None,
              capacity: Mapping[str, Any] | str | None = SAME_AS_ALLOCATABLE,
              taints: list[Obj] | None = None, unschedulable: bool = False, images: list[Obj] | None = None,
              spec: Obj | None = None) -> Obj:
    """A Node.

    ``labels`` come after the ``kubernetes.io/hostname`` label (left out with ``hostname=False``).
    ``status.allocatable`` holds cpu, memory and pods (those not ``None``) then ``allocatable``'s
    entries; ``capacity`` is a copy of it unless given (``None``: no capacity). A node with neither
    has no status. ``spec`` (even ``{}``) is written as given, with ``taints`` and ``unschedulable``
    added to it when set.
    """
    node_labels = {HOSTNAME_LABEL: name} if hostname else {}
    node_labels.update(labels or {})
    obj: Obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": node_labels}}
    node_spec = dict(spec) if spec is not None else None
    if taints:
        node_spec = {**(node_spec or {}), "taints": taints}
    if unschedulable:
        node_spec = {**(node_spec or {}), "unschedulable": True}
    if node_spec is not None:
        obj["spec"] = node_spec
    amounts: Obj = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    if pods is not None:
        amounts["pods"] = str(pods)
    amounts.update(allocatable or {})
    status: Obj = {}
    if amounts:
        status["allocatable"] = amounts
    if capacity == SAME_AS_ALLOCATABLE:
        if amounts:
            status["capacity"] = dict(amounts)
    elif capacity is not None:
        status["capacity"] = capacity
    if images:
        status["images"] = images
    if status:
        obj["status"] = status
    return obj


def make_taint(key: str = "k", value: str = "v", effect: str = "NoSchedule") -> Obj:
    return {"key": key, "value": value, "effect": effect}


# -- pods ----------------------------------------------------------------------------------------------
def make_container(name: str = "app", cpu: str | None = None, memory: str | None = None, *, image: str = PAUSE,
                   requests: Mapping[str, Any] | None = None, limits: Mapping[str, Any] | None = None,
                   resources: Obj | None = None, restart_policy: str | None = None,
                   ports: list[Obj] | None = None, **fields: Any) -> Obj:
    """A container. ``resources.requests`` holds cpu and memory (those not ``None``) then
    ``requests``' entries, and is written when either is given (``requests={}`` writes an empty
    one); ``resources`` (``{}`` included) is merged last and forces the stanza to be written."""
    res: Obj = {}
    amounts = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    if amounts or requests is not None:
        res["requests"] = {**amounts, **(requests or {})}
    if limits is not None:
        res["limits"] = dict(limits)
    if resources is not None:
        res.update(resources)
    container: Obj = {"name": name, "image": image}
    if res or resources is not None:
        container["resources"] = res
    if restart_policy:
        container["restartPolicy"] = restart_policy
    if ports:
        container["ports"] = ports
    container.update(fields)
    return container


def make_pod(name: str, cpu: str | None = "100m", memory: str | None = "500Mi", *,
             namespace: str | None = "default", uid: str | None = None,
             labels: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None,
             usage: str | None = None, owner_references: list[Obj] | None = None,
             deletion_timestamp: str | None = None, priority_class: str | None = None,
             grace: int | None = None, node: str | None = None, scheduler_name: str | None = None,
             containers: list[Obj] | None = None, init_containers: list[Obj] | None = None,
             image: str = PAUSE, status: Obj | None = None, start_time: str | None = None,
             **spec: Any) -> Obj:
    """A Pod.

    Without ``containers`` it has one container, ``app``, requesting ``cpu`` and ``memory`` (those
    not ``None``). ``namespace=None`` leaves the namespace to the loader's default. ``labels`` (an
    empty dict included) and ``annotations`` are written when given; ``usage`` is the simulated
    resource usage annotation the kubelet reads. ``priority_class``, ``grace``
    (terminationGracePeriodSeconds), ``node`` (nodeName) and ``scheduler_name`` set those spec
    fields; any other keyword is a spec field written as is (``affinity=...``, ``priority=5``).
    ``start_time`` sets ``status.startTime``.
    """
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if uid is not None:
        meta["uid"] = uid
    if labels is not None:
        meta["labels"] = dict(labels)
    notes = dict(annotations or {})
    if usage:
        notes[USAGE_ANNOTATION] = usage
    if annotations is not None or notes:
        meta["annotations"] = notes
    if owner_references is not None:
        meta["ownerReferences"] = owner_references
    if deletion_timestamp is not None:
        meta["deletionTimestamp"] = deletion_timestamp
    pod_spec: Obj = {}
    if scheduler_name:
        pod_spec["schedulerName"] = scheduler_name
    if containers is None:
        containers = [make_container("app", cpu, memory, image=image)]
    pod_spec["containers"] = containers
    if init_containers:
        pod_spec["initContainers"] = init_containers
    if priority_class:
        pod_spec["priorityClassName"] = priority_class
    if grace is not None:
        pod_spec["terminationGracePeriodSeconds"] = grace
    if node:
        pod_spec["nodeName"] = node
    pod_spec.update(spec)
    obj: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}
    pod_status = dict(status or {})
    if start_time:
        pod_status["startTime"] = start_time
    if status is not None or pod_status:
        obj["status"] = pod_status
    return obj


def make_priority_class(name: str, value: int, policy: str | None = None, *, global_default: bool = False,
                        **fields: Any) -> Obj:
    pc: Obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
               "value": value}
    if policy:
        pc["preemptionPolicy"] = policy
    if global_default:
        pc["globalDefault"] = True
    pc.update(fields)
    return pc


def make_namespace(name: str, labels: Mapping[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name}
    if labels is not None:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


# -- policy ----------------------------------------------------------------------------------------------
def _meta(name: str, namespace: str | None) -> Obj:
    return {"name": name, **({"namespace": namespace} if namespace else {})}


def make_pdb(name: str, selector: Obj | None, *, namespace: str | None = None,
             min_available: int | str | None = None, max_unavailable: int | str | None = None,
             disruptions_allowed: int | None = None, status: Obj | None = None, **spec: Any) -> Obj:
    """A PodDisruptionBudget (a ``None`` selector is left out); ``disruptions_allowed`` pins
    ``status.disruptionsAllowed``."""
    pdb_spec: Obj = {}
    if min_available is not None:
        pdb_spec["minAvailable"] = min_available
    if max_unavailable is not None:
        pdb_spec["maxUnavailable"] = max_unavailable
    if selector is not None:
        pdb_spec["selector"] = selector
    pdb_spec.update(spec)
    obj: Obj = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": _meta(name, namespace),
                "spec": pdb_spec}
    pdb_status = dict(status or {})
    if disruptions_allowed is not None:
        pdb_status["disruptionsAllowed"] = disruptions_allowed
    if status is not None or pdb_status:
        obj["status"] = pdb_status
    return obj


def make_quota(name: str, hard: Mapping[str, str], *, namespace: str | None = None, **spec: Any) -> Obj:
    """A ResourceQuota; other keywords (``scopes``, ``scopeSelector``) are spec fields."""
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": _meta(name, namespace),
            "spec": {"hard": dict(hard), **spec}}


# -- workloads -------------------------------------------------------------------------------------------
def make_pod_template(pod: Obj, labels: Mapping[str, str]) -> Obj:
    """A pod template from a pod: its metadata without name and namespace, ``labels`` instead of its own."""
    meta = {k: v for k, v in pod["metadata"].items() if k not in ("name", "namespace", "labels")}
    meta["labels"] = dict(labels)
    return {"metadata": meta, "spec": pod["spec"]}


def make_workload(kind: str, name: str, pod: Obj, *, replicas: int | None = None, namespace: str | None = None,
                  selector: bool = True, **spec: Any) -> Obj:
    """A controller of ``kind`` whose pods are ``pod`` labelled ``app: <name>`` (and selected by it
    unless ``selector=False``); other keywords are spec fields."""
    labels = {"app": name}
    workload_spec: Obj = {}
    if replicas is not None:
        workload_spec["replicas"] = replicas
    if selector:
        workload_spec["selector"] = {"matchLabels": dict(labels)}
    workload_spec["template"] = make_pod_template(pod, labels)
    workload_spec.update(spec)
    return {"apiVersion": api_version(kind), "kind": kind, "metadata": _meta(name, namespace),
            "spec": workload_spec}


def make_deployment(name: str, replicas: int, pod: Obj, *, namespace: str | None = None, **spec: Any) -> Obj:
    return make_workload("Deployment", name, pod, replicas=replicas, namespace=namespace, **spec)


def make_replicaset(name: str, replicas: int, pod: Obj, *, namespace: str | None = None, **spec: Any) -> Obj:
    return make_workload("ReplicaSet", name, pod, replicas=replicas, namespace=namespace, **spec)


def make_statefulset(name: str, replicas: int, pod: Obj, *, namespace: str | None = None, **spec: Any) -> Obj:
    return make_workload("StatefulSet", name, pod, replicas=replicas, namespace=namespace, serviceName=name,
                         **spec)


def make_daemonset(name: str, pod: Obj, *, namespace: str | None = None, **spec: Any) -> Obj:
    return make_workload("DaemonSet", name, pod, namespace=namespace, **spec)


def make_job(name: str, pod: Obj, *, namespace: str | None = None, **spec: Any) -> Obj:
    return make_workload("Job", name, pod, namespace=namespace, selector=False, **spec)


# -- NUMA topology ---------------------------------------------------------------------------------------
def make_nrt_zone(numa_id: int, available: Mapping[str, str], allocatable: Mapping[str, str] | None = None,
                  costs: Mapping[int, int] | None = None) -> Obj:
    """One NUMA zone of a NodeResourceTopology (``node-<id>``); capacity equals allocatable."""
    allocatable = allocatable or available
    zone: Obj = {
        "name": f"node-{numa_id}", "type": "Node",
        "resources": [{"name": r, "capacity": allocatable[r], "allocatable": allocatable[r], "available": q}
                      for r, q in available.items()],
    }
    if costs:
        zone["costs"] = [{"name": f"node-{i}", "value": v} for i, v in costs.items()]
    return zone


def make_nrt(name: str, zones: list[Obj], policy: str = "single-numa-node", scope: str = "container",
             fingerprint: str | None = None, rv: str = "1", placement: Mapping[str, int] | None = None) -> Obj:
    """A NodeResourceTopology (topology.node.k8s.io/v1alpha2) with the kubelet's manager attributes;
    ``placement`` (``namespace/pod/container`` -> zone id) is written in the ``numaplacement``
    encoding, as an exporter does."""
    attrs = [{"name": "topologyManagerPolicy", "value": policy}, {"name": "topologyManagerScope", "value": scope}]
    if fingerprint is not None:
        attrs.append({"name": "nodeTopologyPodsFingerprint", "value": fingerprint})
    if placement is not None:
        ids = {(ns, pod, c): zone for key, zone in placement.items() for ns, pod, c in [key.split("/")]}
        payload = numaplacement.encode(len(zones), ids)
        attrs.append({"name": numaplacement.ATTR_METADATA, "value": payload.metadata()})
        vectors = {f"node-{numa_id}": vector for numa_id, vector in payload.vectors.items()}
        zones = [{**z, "attributes": [{"name": numaplacement.ATTR_VECTOR, "value": vectors[z["name"]]}]}
                 if z["name"] in vectors else z for z in zones]
    return {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
            "metadata": {"name": name, "resourceVersion": rv}, "attributes": attrs, "zones": zones}


# -- gangs ------------------------------------------------------------------------------------------------
def make_pod_group(name: str, min_member: int, *, namespace: str | None = "default", **spec: Any) -> Obj:
    """A PodGroup (scheduler-plugins' Coscheduling) needing ``min_member`` pods; any keyword is a
    spec field (``scheduleTimeoutSeconds=30``, ``minResources={...}``)."""
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": _meta(name, namespace),
            "spec": {"minMember": min_member, **spec}}


def make_gang(group: str, size: int, cpu: str = "1", *, namespace: str | None = "default") -> list[Obj]:
    """``size`` pods ``GROUP-0``, ``GROUP-1``... of the PodGroup ``group`` (its label on them)."""
    return [make_pod(f"{group}-{i}", cpu=cpu, namespace=namespace, labels={POD_GROUP_LABEL: group})
            for i in range(size)]


# -- scheduler configuration -----------------------------------------------------------------------------
def make_scheduler_config(*profiles: Obj) -> Obj:
    """A KubeSchedulerConfiguration with the given profiles."""
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": list(profiles)}


# -- storage ---------------------------------------------------------------------------------------
def make_storage_class(name: str, provisioner: str = "ebs.csi.aws.com", *, wait: bool = True,
                       default: bool = False, allowed_zones: list[str] | None = None, **fields: Any) -> Obj:
    """A StorageClass: ``WaitForFirstConsumer`` unless ``wait=False`` (Immediate); ``default`` marks
    it the default class; ``allowed_zones`` become its ``allowedTopologies`` on the zone label."""
    meta: Obj = {"name": name}
    if default:
        meta["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    sc: Obj = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": meta,
               "provisioner": provisioner, "volumeBindingMode": "WaitForFirstConsumer" if wait else "Immediate"}
    if allowed_zones:
        sc["allowedTopologies"] = [{"matchLabelExpressions": [
            {"key": "topology.kubernetes.io/zone", "values": list(allowed_zones)}]}]
    sc.update(fields)
    return sc


def make_pv(name: str, size: str = "10Gi", *, storage_class: str | None = "local", node: str | None = None,
            zone: str | None = None, zone_label: bool = False, access_modes: list[str] | None = None,
            claim: str | None = None, driver: str | None = None, labels: Mapping[str, str] | None = None,
            **spec: Any) -> Obj:
    """A PersistentVolume: a local volume pinned to ``node`` (hostname node affinity), or one pinned
    to ``zone`` (node affinity, or the zone *label* only with ``zone_label=True``), or a CSI volume of
    ``driver``; ``claim`` (``namespace/name`` or ``name``) pre-binds it."""
    vspec: Obj = {"capacity": {"storage": size}, "accessModes": list(access_modes or ["ReadWriteOnce"])}
    if storage_class is not None:
        vspec["storageClassName"] = storage_class
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    exprs = []
    if node is not None:
        exprs.append({"key": "kubernetes.io/hostname", "operator": "In", "values": [node]})
    if zone is not None and not zone_label:
        exprs.append({"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]})
    if zone is not None and zone_label:
        meta.setdefault("labels", {})["topology.kubernetes.io/zone"] = zone
    if exprs:
        vspec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}
    if node is not None and driver is None:
        vspec["local"] = {"path": f"/mnt/disks/{name}"}
    else:
        vspec["csi"] = {"driver": driver or "ebs.csi.aws.com", "volumeHandle": f"vol-{name}"}
    if claim is not None:
        ns, _, cname = claim.rpartition("/")
        vspec["claimRef"] = {"namespace": ns or "default", "name": cname}
    vspec.update(spec)
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": vspec}


def make_pvc(name: str, size: str = "10Gi", *, storage_class: str | None = "local", namespace: str | None = "default",
             access_modes: list[str] | None = None, volume: str | None = None, **spec: Any) -> Obj:
    """A PersistentVolumeClaim of ``storage_class`` (``None``: no class field, so the default class
    applies; ``""``: explicitly none); ``volume`` pre-binds it to that volume."""
    cspec: Obj = {"accessModes": list(access_modes or ["ReadWriteOnce"]), "resources": {"requests": {"storage": size}}}
    if storage_class is not None:
        cspec["storageClassName"] = storage_class
    if volume is not None:
        cspec["volumeName"] = volume
    cspec.update(spec)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": _meta(name, namespace), "spec": cspec}


def make_csinode(node: str, driver: str = "ebs.csi.aws.com", *, count: int | None = None,
                 topology_keys: list[str] | None = None) -> Obj:
    """A CSINode for ``node`` with one driver, its attach limit ``count`` and topology keys."""
    entry: Obj = {"name": driver, "nodeID": f"id-{node}"}
    if count is not None:
        entry["allocatable"] = {"count": count}
    if topology_keys:
        entry["topologyKeys"] = list(topology_keys)
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": node},
            "spec": {"drivers": [entry]}}


def with_claims(pod: Obj, *claims: str) -> Obj:
    """``pod`` with one persistentVolumeClaim volume per claim name (volume name = claim name)."""
    spec = dict(pod["spec"])
    spec["volumes"] = [*spec.get("volumes", []), *({"name": c, "persistentVolumeClaim": {"claimName": c}}
                                                  for c in claims)]
    return {**pod, "spec": spec}
