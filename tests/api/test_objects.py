"""The shared object accessors and constants of :mod:`kubesched.k8s.objects`."""

from __future__ import annotations

import pytest

from kubesched.k8s.kinds import is_namespaced
from kubesched.k8s.objects import (
    is_terminal,
    key_of,
    namespace_of,
    object_key,
    scheduler_name_of,
    split_key,
)


@pytest.mark.parametrize(
    ("kind", "namespace", "name", "key"),
    [("Pod", "ns", "p", "ns/p"), ("Pod", None, "p", "default/p"), ("Node", None, "n1", "n1"),
     ("PriorityClass", "ignored", "high", "high"), ("SomethingElse", "ns", "x", "x")],
)
def test_object_key(kind: str, namespace: str | None, name: str, key: str) -> None:
    assert object_key(kind, namespace, name) == key
    assert is_namespaced(kind) is (key != name)


def test_key_of_a_stored_object_is_its_object_key() -> None:
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}
    node = {"kind": "Node", "metadata": {"name": "n1"}}
    for obj in (pod, node):
        meta = obj["metadata"]
        assert key_of(obj) == object_key(obj["kind"], meta.get("namespace"), meta["name"])
    assert split_key(key_of(pod)) == ("ns", "p")
    assert namespace_of(pod) == "ns" and namespace_of({"metadata": {"name": "x"}}) == "default"


@pytest.mark.parametrize(("phase", "terminal"), [("Succeeded", True), ("Failed", True), ("Running", False),
                                                 ("Pending", False), (None, False)])
def test_is_terminal(phase: str | None, terminal: bool) -> None:
    assert is_terminal({"status": {"phase": phase}}) is terminal


def test_scheduler_name_defaults() -> None:
    assert scheduler_name_of({"spec": {}}) == "default-scheduler"
    assert scheduler_name_of({"spec": {"schedulerName": "mine"}}) == "mine"
