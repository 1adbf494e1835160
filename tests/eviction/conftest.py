"""The kubelet-eviction tests' defaults: 2Gi nodes, pods without requests or namespace (the
``simulate`` fixture is the one of tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesched.testkit.builders import make_node, make_pod

Obj = dict[str, Any]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def node(name: str, memory: str = "2Gi", cpu: str = "4", *, capacity: dict[str, str] | None = None,
         **fields: Any) -> Obj:
    """A node of 4 cpu and 2Gi, reporting a capacity only when given one."""
    return make_node(name, cpu, memory, capacity=capacity, **fields)


def pod(name: str, cpu: str | None = None, memory: str | None = None, **fields: Any) -> Obj:
    """A pod requesting nothing unless told, its namespace left to the loader."""
    return make_pod(name, cpu, memory, namespace=None, **fields)
