"""The object store's secondary indexes are kept exactly in step with its objects: for random
creates, updates (claimRef set, changed, cleared) and deletes, with the index added before, between
or after them, :meth:`ObjectStore.by_index` files the very objects a scan over all of them finds."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.cluster.embedded.apiserver.store import ObjectStore

NAMES = [f"pv-{i}" for i in range(6)]
REFS = [None, ("default", "a"), ("default", "b"), ("other", "a")]


def _volume(name: str, ref: tuple[str, str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}}
    if ref is not None:
        spec["claimRef"] = {"namespace": ref[0], "name": ref[1]}
    return {"kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def _by_claim_ref(volume: dict[str, Any]) -> list[tuple[Any, Any]]:
    ref = (volume.get("spec") or {}).get("claimRef")
    return [(ref.get("namespace"), ref.get("name"))] if ref else []


ops = st.lists(st.tuples(st.sampled_from(["put", "delete", "index"]), st.sampled_from(NAMES),
                         st.sampled_from(REFS)), max_size=30)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_the_index_files_what_a_scan_finds(steps: list[tuple[str, str, tuple[str, str] | None]]) -> None:
    store = ObjectStore(lambda: 0.0)
    indexed = False
    for op, name, ref in steps:
        present = store.get("PersistentVolume", None, name) is not None
        if op == "index":
            store.add_index("PersistentVolume", "claimRef", _by_claim_ref)
            indexed = True
        elif op == "delete":
            if present:
                store.remove("PersistentVolume", None, name)
        elif present:
            store.update(_volume(name, ref))
        else:
            store.create(_volume(name, ref))
        if indexed:
            for value in REFS[1:]:
                want = sorted(v["metadata"]["name"] for v in store.list("PersistentVolume") if _by_claim_ref(v) == [value])
                got = store.by_index("PersistentVolume", "claimRef", value)
                assert sorted(v["metadata"]["name"] for v in got) == want
                assert all(v is store.get("PersistentVolume", None, v["metadata"]["name"]) for v in got)
