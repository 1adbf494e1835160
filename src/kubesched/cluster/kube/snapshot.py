"""A read-only snapshot of a live cluster, for ``kubesched explain`` and ``kubesched whatif``:
what `kubectl get nodes,pods,pdb,priorityclasses,resourcequotas -A -o yaml` would print, as the
objects of a scenario (Pending pods are then scheduled by the simulator; bound pods keep their
node). Only GET requests are made."""

from __future__ import annotations

from typing import Any

from kubesched.cluster.kube.resources import NODE, POD, POD_DISRUPTION_BUDGET, PRIORITY_CLASS, Resource
from kubesched.cluster.kube.transport import ClientOptions, Transport, load_api_client
from kubesched.k8s.objects import ApiError, is_terminal

RESOURCE_QUOTA = Resource("ResourceQuota", "", "v1", "resourcequotas")
#: in creation order: classes before the pods that name them, quotas before pods they charge
SNAPSHOT_RESOURCES = (PRIORITY_CLASS, NODE, RESOURCE_QUOTA, POD_DISRUPTION_BUDGET, POD)
DROPPED_METADATA = ("managedFields", "resourceVersion", "generation", "selfLink")


def _clean(resource: Resource, item: dict[str, Any]) -> dict[str, Any] | None:
    item = dict(item)
    item["apiVersion"], item["kind"] = resource.api_version, resource.kind
    meta = {k: v for k, v in (item.get("metadata") or {}).items() if k not in DROPPED_METADATA}
    item["metadata"] = meta
    if resource is PRIORITY_CLASS and str(meta.get("name", "")).startswith("system-"):
        return None  # the embedded API server has the two system classes already
    if resource is POD and is_terminal(item):
        return None
    return item


def list_all(transport: Transport, resource: Resource, page_size: int = 500) -> list[dict[str, Any]]:
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


def read_snapshot(kubeconfig: str | None, context: str | None = None) -> list[dict[str, Any]]:
    transport = Transport(load_api_client(kubeconfig, context), ClientOptions(), user_agent="kubesched-snapshot")
    objects: list[dict[str, Any]] = []
    for resource in SNAPSHOT_RESOURCES:
        for item in list_all(transport, resource):
            cleaned = _clean(resource, item)
            if cleaned is not None:
                objects.append(cleaned)
    return objects
