"""A read-only snapshot of a live cluster: for ``kubesched explain`` / ``whatif --kubeconfig``, which
hold it in memory (:func:`take_snapshot`), and for ``kubesched snapshot``, which writes it to a file
page by page as it arrives (:func:`iter_snapshot`; both read through that one iterator).

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

from collections.abc import Callable, Iterator
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
    # apiVersion and kind first, as kubectl writes them (list items come without them)
    item = {"apiVersion": resource.api_version, "kind": resource.kind,
            **{k: v for k, v in item.items() if k not in ("apiVersion", "kind")}}
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


def iter_list(transport: Transport, resource: Resource,
              page_size: int = 500) -> Iterator[tuple[list[dict[str, Any]], bool]]:
    """The objects of ``resource`` one page (``limit``/``continue``) at a time, as ``(items, last)``;
    nothing when the server does not serve the resource (404). A page is requested only when the
    one before it has been consumed."""
    query: dict[str, Any] = {"limit": page_size}
    while True:
        try:
            page = transport.call("GET", resource.collection_path(), query=query) or {}
        except ApiError as err:
            if err.code == 404:  # the server does not serve this resource: nothing of it to copy
                return
            raise
        token = (page.get("metadata") or {}).get("continue")
        yield page.get("items") or [], not token
        if not token:
            return
        query = {"limit": page_size, "continue": token}


@dataclass
class Page:
    """One page of a snapshot being read: the objects of ``resource`` it keeps (cleaned; finished
    pods left out), and where the reading of ``resource`` stands."""

    resource: Resource
    #: the objects kept from this page, cleaned, in the server's order
    items: list[dict[str, Any]]
    #: objects of ``resource`` read so far, this page's included (finished pods included)
    read: int
    #: the last page of ``resource``
    done: bool
    #: False: the server does not serve ``resource`` (404; the page is empty)
    served: bool = True
    #: why ``resource`` is left out (403: the RBAC rule to grant); the page is empty
    warning: str | None = None


def _forbidden(resource: Resource, err: ApiError) -> str:
    group = resource.spec.group or '""'
    return (f"cannot list {resource.plural} ({err.message}): left out of the snapshot; "
            f"grant verb list on resource {resource.plural} in apiGroup {group}")


def iter_snapshot(transport: Transport, page_size: int = 500,
                  resources: tuple[Resource, ...] = SNAPSHOT_RESOURCES) -> Iterator[Page]:
    """The snapshot page by page, lazily (a page is requested when the one before it has been
    consumed, so a consumer that does not keep them holds one page at a time): each of
    ``resources`` in turn, in the order a reader of the file expects. Each resource ends with a
    page whose ``done`` is set: an empty one when the server does not serve the resource, or when
    the credentials may not list it (then with a ``warning``). Any other failure raises ApiError
    naming the resource, and so does a 403 after the first page: part of a resource is not a
    snapshot of it."""
    for resource in resources:
        read = pages = 0
        done = False
        try:
            for items, last in iter_list(transport, resource, page_size):
                read, pages = read + len(items), pages + 1
                kept = [c for c in (_clean(resource, item) for item in items) if c is not None]
                done = last
                yield Page(resource, kept, read, done)
        except ApiError as err:
            if err.code == 403 and pages == 0:
                yield Page(resource, [], 0, True, warning=_forbidden(resource, err))
                continue
            raise ApiError(err.code, err.reason, f"listing {resource.plural}: {err.message}") from err
        if not done:  # not served (404), or gone between two pages: what was read stands
            yield Page(resource, [], read, True, served=pages > 0)


def take_snapshot(transport: Transport, progress: Progress | None = None, page_size: int = 500) -> Snapshot:
    """The whole snapshot in memory (for commands that simulate it at once)."""
    snapshot = Snapshot()
    for page in iter_snapshot(transport, page_size):
        snapshot.objects.extend(page.items)
        if page.warning is not None:
            snapshot.warnings.append(page.warning)
        elif page.done and progress is not None:
            progress(page.resource, page.read)
    return snapshot


def snapshot_transport(kubeconfig: str | None, context: str | None = None) -> Transport:
    """The read-only client of a snapshot (user agent ``kubesched-snapshot``)."""
    return Transport(load_api_client(kubeconfig, context), ClientOptions(), user_agent="kubesched-snapshot")


def read_snapshot(kubeconfig: str | None, context: str | None = None,
                  progress: Progress | None = None) -> Snapshot:
    return take_snapshot(snapshot_transport(kubeconfig, context), progress)
