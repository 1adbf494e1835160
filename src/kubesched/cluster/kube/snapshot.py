"""A read-only snapshot of a live cluster: for ``kubesched explain`` / ``whatif --kubeconfig`` and for
``kubesched snapshot``, which writes it as `kubectl get -o yaml` would (a ``v1 List``).

Everything scheduling depends on is read, with pagination (``limit``/``continue``): namespaces (their
labels feed namespaceSelectors), PriorityClasses, RuntimeClasses, Nodes, NodeResourceTopologies (when served),
ResourceQuotas, PodDisruptionBudgets, Services and ReplicationControllers (default spreading),
StorageClasses, CSIDrivers, CSINodes, CSIStorageCapacities, PersistentVolumes and
PersistentVolumeClaims (volume binding), Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs and
Pods. Only GET requests are made; Secrets
and ConfigMaps are never read. A resource the server does not serve (404) is skipped; one the
credentials may not list (403) is skipped with a warning naming the RBAC rule that is missing.

The objects keep their ``uid``, owner references, labels and status (they are restored as existing
objects, see docs/scenarios.md); ``managedFields`` and the ``kubectl.kubernetes.io/last-applied-
configuration`` annotation are dropped, and so are the literal values of environment variables
(``env[].value``; ``valueFrom`` references are kept): a snapshot carries no configuration data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubesched.cluster.kube.resources import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    DAEMON_SET,
    DEPLOYMENT,
    JOB,
    NAMESPACE,
    NODE,
    NODE_RESOURCE_TOPOLOGY,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    POD_DISRUPTION_BUDGET,
    PRIORITY_CLASS,
    REPLICA_SET,
    REPLICATION_CONTROLLER,
    RESOURCE_QUOTA,
    RUNTIME_CLASS,
    SERVICE,
    STATEFUL_SET,
    STORAGE_CLASS,
    Resource,
)
from kubesched.cluster.kube.transport import ClientOptions, Transport, load_api_client
from kubesched.k8s.objects import ApiError, is_terminal

#: what a snapshot reads, in the order a reader of the file expects (classes before the pods naming them)
SNAPSHOT_RESOURCES: tuple[Resource, ...] = (
    NAMESPACE, PRIORITY_CLASS, RUNTIME_CLASS, NODE, NODE_RESOURCE_TOPOLOGY, RESOURCE_QUOTA, POD_DISRUPTION_BUDGET, SERVICE,
    REPLICATION_CONTROLLER, STORAGE_CLASS, CSI_DRIVER, CSI_NODE, CSI_STORAGE_CAPACITY, PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM, DEPLOYMENT, REPLICA_SET, STATEFUL_SET, DAEMON_SET, JOB, POD,
)
DROPPED_METADATA = ("managedFields", "selfLink")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
POD_TEMPLATE_KINDS = ("ReplicationController", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job")

Progress = Callable[[Resource, int], None]


@dataclass
class Snapshot:
    """The objects read, and the warnings (resources that could not be listed)."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _without_env_values(pod_spec: dict[str, Any]) -> None:
    for section in ("containers", "initContainers", "ephemeralContainers"):
        for container in pod_spec.get(section) or []:
            for var in container.get("env") or []:
                var.pop("value", None)


def _clean(resource: Resource, item: dict[str, Any]) -> dict[str, Any] | None:
    item = dict(item)
    item["apiVersion"], item["kind"] = resource.api_version, resource.kind
    meta = {k: v for k, v in (item.get("metadata") or {}).items() if k not in DROPPED_METADATA}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    item["metadata"] = meta
    if resource is POD and is_terminal(item):
        return None
    if resource is POD:
        _without_env_values(item.get("spec") or {})
    elif resource.kind in POD_TEMPLATE_KINDS:
        _without_env_values((((item.get("spec") or {}).get("template") or {}).get("spec")) or {})
    return item


def list_all(transport: Transport, resource: Resource, page_size: int = 500) -> list[dict[str, Any]]:
    """Every object of ``resource``, page by page; [] when the server does not serve it (404)."""
    items: list[dict[str, Any]] = []
    query: dict[str, Any] = {"limit": page_size}
    while True:
        try:
            page = transport.call("GET", resource.collection_path(), query=query) or {}
        except ApiError as err:
            if err.code == 404:  # the server does not serve this resource: nothing of it to copy
                return items
            raise
        items.extend(page.get("items") or [])
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return items
        query = {"limit": page_size, "continue": token}


def take_snapshot(transport: Transport, progress: Progress | None = None, page_size: int = 500) -> Snapshot:
    snapshot = Snapshot()
    for resource in SNAPSHOT_RESOURCES:
        try:
            items = list_all(transport, resource, page_size)
        except ApiError as err:
            if err.code != 403:
                raise
            group = resource.group or '""'
            snapshot.warnings.append(f"cannot list {resource.plural} ({err.message}): left out of the snapshot; "
                                     f"grant verb list on resource {resource.plural} in apiGroup {group}")
            continue
        for item in items:
            cleaned = _clean(resource, item)
            if cleaned is not None:
                snapshot.objects.append(cleaned)
        if progress is not None:
            progress(resource, len(items))
    return snapshot


def read_snapshot(kubeconfig: str | None, context: str | None = None,
                  progress: Progress | None = None) -> Snapshot:
    transport = Transport(load_api_client(kubeconfig, context), ClientOptions(), user_agent="kubesched-snapshot")
    return take_snapshot(transport, progress)
