"""A plugin's declared bases are its contract: every capability the framework finds in a registered
plugin with ``isinstance`` (the runtime-checkable protocols of the framework) is one the class lists
among its bases, so that mypy checks its signatures and a reader sees it in the class statement."""

from __future__ import annotations

import inspect
import typing
from typing import Any

import pytest

from kubesched.scheduler.framework import capabilities, interface, preemption
from kubesched.scheduler.framework.capabilities import PodIndependentFilter
from kubesched.scheduler.plugins.registry import plugin_registry
from kubesched.testkit.framework import FakeHandle


def _runtime_protocols() -> list[type]:
    """The protocols the framework may sort plugins by: every runtime-checkable one it defines."""
    found = []
    for module in (interface, capabilities, preemption):
        for _, value in inspect.getmembers(module, inspect.isclass):
            if value.__module__ == module.__name__ and getattr(value, "_is_runtime_protocol", False):
                found.append(value)
    return found


def _matches(obj: object, protocol: type) -> bool:
    """What ``isinstance(obj, protocol)`` answers for a runtime-checkable protocol: every member
    present (on a class, its class attributes and methods; on an instance, its attributes too)."""
    return all(hasattr(obj, member) for member in typing._get_protocol_attrs(protocol))  # type: ignore[attr-defined]


def _undeclared(cls: type, candidate: object) -> list[str]:
    return sorted(p.__name__ for p in _runtime_protocols() if _matches(candidate, p) and p not in cls.__mro__)


def test_the_protocols_found_include_the_vector_and_preemption_capabilities() -> None:
    names = {p.__name__ for p in _runtime_protocols()}
    assert {"FilterPlugin", "FilterVectorAt", "PodIndependentFilter", "PreemptionArithmetic",
            "PostFilterDryRun", "PreemptionPolicy"} <= names


@pytest.mark.parametrize("name", sorted(plugin_registry()))
def test_every_capability_a_registered_plugin_is_used_through_is_declared(name: str) -> None:
    """Checked on the class and on an instance made with default args (an attribute set in
    ``__init__`` would be found by isinstance too)."""
    cls: Any = plugin_registry()[name]
    assert _undeclared(cls, cls) == [], f"{name} implements capabilities it does not declare"
    instance = cls({}, FakeHandle())
    assert _undeclared(cls, instance) == [], f"{name} instances implement capabilities the class does not declare"
    for protocol in _runtime_protocols():
        assert isinstance(instance, protocol) == (protocol in cls.__mro__), (name, protocol.__name__)


@pytest.mark.parametrize("name", sorted(plugin_registry()))
def test_pod_independence_is_declared_and_not_just_an_attribute(name: str) -> None:
    """``depends_on_pods = False`` makes a filter pod-independent in preemption dry runs; it goes
    with :class:`PodIndependentFilter` among the bases, and the base with the attribute."""
    cls: Any = plugin_registry()[name]
    declared = PodIndependentFilter in cls.__mro__
    assert (getattr(cls, "depends_on_pods", True) is False) == declared


def test_an_undeclared_capability_is_caught() -> None:
    """The check itself: a filter offering ``filter_vector_at`` without listing FilterVectorAt."""

    class Sneaky(interface.FilterPlugin):
        name = "Sneaky"

        def filter(self, state: Any, pod: Any, node: Any) -> None:
            return None

        def filter_vector_at(self, state: Any, pod: Any, snapshot: Any, where: Any) -> None:
            return None

    assert _undeclared(Sneaky, Sneaky) == ["FilterVectorAt"]
