"""`kubesched run` binds a pod's volumes before the pod, as kube-scheduler's VolumeBinding does: the
volume's claimRef and the claim's selected node are written through the API, and the pod is bound
only once the PersistentVolume controller (here: the test) has bound every claim."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from fakeapi import FakeApiServer

from conftest import Replica, complete_volume_bindings, node_of, pod_with_claims, volume_objects, wait_for
from kubesched.cluster.kube.cache import InformerCache
from kubesched.cluster.kube.resources import PERSISTENT_VOLUME
from kubesched.testkit.builders import make_node

pytestmark = pytest.mark.timeout(60)


def test_the_pod_is_bound_after_its_volumes(fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    fake.create(make_node("n1", cpu="4"))
    replica = replicas("a")
    for obj in volume_objects():
        fake.create(obj)
    wait_for(lambda: replica.cluster.get("PersistentVolume", "", "pv-1") is not None
             and replica.cluster.get("PersistentVolumeClaim", "default", "dynamic") is not None)
    fake.create(pod_with_claims("db", "static", "dynamic"))

    def written() -> bool:
        pv = fake.get("PersistentVolume", None, "pv-1")
        claim = fake.get("PersistentVolumeClaim", "default", "dynamic")
        return bool(pv and pv["spec"].get("claimRef") and claim
                    and (claim["metadata"].get("annotations") or {}).get("volume.kubernetes.io/selected-node"))

    wait_for(written, what="PreBind's writes")
    pv = fake.get("PersistentVolume", None, "pv-1")
    assert pv is not None and pv["spec"]["claimRef"]["name"] == "static"
    assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    dynamic = fake.get("PersistentVolumeClaim", "default", "dynamic")
    assert dynamic is not None
    assert dynamic["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "n1"
    time.sleep(2.5)  # several polls: the claims are not bound yet, so neither is the pod
    assert node_of(fake, "db") is None
    complete_volume_bindings(fake)
    wait_for(lambda: node_of(fake, "db") == "n1", timeout=10, what="pod bound once its claims are")


def test_a_missing_claim_is_reported_and_the_pod_scheduled_once_it_exists(
        fake: FakeApiServer, replicas: Callable[..., Replica]) -> None:
    fake.create(make_node("n1", cpu="4"))
    replicas("a")
    fake.create(pod_with_claims("db", "static"))
    wait_for(lambda: any('persistentvolumeclaim "static" not found' in (c.get("message") or "")
                         for c in ((fake.get("Pod", "default", "db") or {}).get("status") or {}).get("conditions") or ()),
             what="PodScheduled=False naming the missing claim")
    for obj in volume_objects():
        fake.create(obj)
    wait_for(lambda: complete_volume_bindings(fake) or node_of(fake, "db") == "n1", timeout=20,
             what="pod scheduled after the claim appeared")


def test_the_informer_cache_tells_which_volumes_changed() -> None:
    """The informers' cache journals changes as the embedded store does (what VolumeBinding's
    candidate index catches up from): watch events, deletes and a relist's synthesised deletes."""
    def volume(name: str, rv: str) -> dict:
        return {"kind": "PersistentVolume", "metadata": {"name": name, "uid": name, "resourceVersion": rv}}

    cache = InformerCache()
    mark, keys = cache.changes("PersistentVolume", None)
    assert keys is None  # not journaled until asked
    cache.apply(PERSISTENT_VOLUME, "ADDED", volume("a", "1"))
    cache.apply(PERSISTENT_VOLUME, "ADDED", volume("b", "2"))
    mark, keys = cache.changes("PersistentVolume", mark)
    assert sorted(keys or ()) == ["a", "b"]
    cache.apply(PERSISTENT_VOLUME, "MODIFIED", volume("a", "3"))
    cache.apply(PERSISTENT_VOLUME, "DELETED", volume("b", "2"))
    mark, keys = cache.changes("PersistentVolume", mark)
    assert sorted(keys or ()) == ["a", "b"]
    assert cache.changes("PersistentVolume", mark) == (mark, [])
    cache.replace(PERSISTENT_VOLUME, [volume("c", "4")])  # a relist: a is gone, c is new
    mark, keys = cache.changes("PersistentVolume", mark)
    assert sorted(keys or ()) == ["a", "c"]
