"""The cluster-autoscaler tests' defaults: node groups, 1-cpu pods, 16Gi nodes (the ``simulate``
fixture is the one of tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesched.testkit.builders import make_deployment, make_node, make_pod

Obj = dict[str, Any]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GROUP_LABEL = "kubesched.io/node-group"


def group(name: str = "pool", *, max_size: int = 3, min_size: int = 0, initial: int = 1, cpu: str = "4",
          memory: str = "16Gi", delay: str = "30s", startup: str = "30s", **extra: Any) -> Obj:
    """One node group of the autoscaler section."""
    return {"name": name, "minSize": min_size, "maxSize": max_size, "initialSize": initial,
            "scaleUpDelay": delay, "nodeStartupTime": startup,
            "template": {"status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}, **extra}


def autoscaler(*groups: Obj, **settings: Any) -> Obj:
    """The scenario's ``cluster`` section with an autoscaler (one default group unless given)."""
    return {"autoscaler": {"nodeGroups": list(groups) or [group()], **settings}}


def pod(name: str, cpu: str | None = "1", **fields: Any) -> Obj:
    """A pod requesting 1 cpu, its namespace left to the loader."""
    return make_pod(name, cpu, None, namespace=None, **fields)


def deployment(name: str, replicas: int, cpu: str = "1", *, grace: int = 30) -> Obj:
    """A Deployment of 1-cpu pods with a 30 s grace period."""
    return make_deployment(name, replicas, pod(name, cpu, grace=grace))


def node(name: str, cpu: str = "4", group_name: str | None = None) -> Obj:
    """A node of 16Gi, a member of ``group_name`` when given."""
    return make_node(name, cpu, "16Gi", labels={GROUP_LABEL: group_name} if group_name else None, capacity=None)
