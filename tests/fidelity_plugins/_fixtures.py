"""The fidelity tests' defaults: containers ``c`` of image ``img``, pods with a uid, nodes of 4 cpu
and 8Gi without capacity."""

from __future__ import annotations

from typing import Any

from kubesched.testkit.builders import make_container, make_node, make_pod


def container(name: str = "c", requests: dict[str, Any] | None = None, *, sidecar: bool = False,
              **fields: Any) -> dict[str, Any]:
    """A container of image ``img``; ``sidecar`` makes it a restartable init container."""
    return make_container(name, image="img", requests=requests, restart_policy="Always" if sidecar else None, **fields)


def pod_obj(name: str = "p", *, containers: list[dict[str, Any]] | None = None,
            init: list[dict[str, Any]] | None = None, spec: dict[str, Any] | None = None,
            labels: dict[str, str] | None = None, ns: str = "default", node: str | None = None) -> dict[str, Any]:
    """A pod (uid ``<ns>/<name>``) of one bare :func:`container` unless ``containers`` are given."""
    return make_pod(name, namespace=ns, uid=f"{ns}/{name}", labels=labels,
                    containers=containers if containers is not None else [container()], init_containers=init,
                    node=node, **(spec or {}))


def node_obj(name: str, allocatable: dict[str, Any] | None = None, *, labels: dict[str, str] | None = None,
             taints: list[dict[str, Any]] | None = None, images: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A node with exactly ``allocatable`` (4 cpu, 8Gi, 110 pods unless given) and no capacity."""
    return make_node(name, cpu=None, memory=None, pods=None, labels=labels,
                     allocatable=allocatable or {"cpu": "4", "memory": "8Gi", "pods": "110"}, capacity=None,
                     taints=taints, images=images)
