"""The fast paths of VolumeBinding's volume search are exact: searching a node's candidates
(:class:`CandidateVolumes`, node-independent checks made once, local volumes filed by hostname)
returns the very volume the search over every volume returns, for random volumes, claims and nodes;
and the :class:`CandidateIndex` kept across changing volume sets files the same candidates as a
fresh search, also when it is kept from the assume cache's changes rather than from its list."""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.volumes.candidates import CandidateIndex, CandidateVolumes, VolumeFacts
from kubesched.api.volumes.claims import claim_class, find_matching_volume
from kubesched.cluster.embedded.apiserver.store import ObjectStore
from kubesched.k8s import journal
from kubesched.scheduler.plugins.volumebinding.assumecache import AssumeCache
from kubesched.testkit.builders import make_pv

HOSTS = ["n1", "n2", "n3"]
ZONES = ["a", "b"]


@st.composite
def volumes(draw: Any) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(0, 12))):
        spec: dict[str, Any] = {
            "capacity": {"storage": f"{draw(st.sampled_from([1, 5, 10, 20]))}Gi"},
            "accessModes": draw(st.sampled_from([["ReadWriteOnce"], ["ReadWriteMany"], ["ReadWriteOnce", "ReadOnlyMany"]])),
            "storageClassName": draw(st.sampled_from(["local", "other", ""])),
            "volumeMode": draw(st.sampled_from(["Filesystem", "Block"])),
        }
        terms = []
        for _ in range(draw(st.integers(0, 2))):
            exprs = []
            if draw(st.booleans()):
                exprs.append({"key": "kubernetes.io/hostname", "operator": "In",
                              "values": draw(st.lists(st.sampled_from(HOSTS), min_size=1, max_size=2, unique=True))})
            if draw(st.booleans()):
                exprs.append({"key": "topology.kubernetes.io/zone", "operator": "In", "values": [draw(st.sampled_from(ZONES))]})
            terms.append({"matchExpressions": exprs} if exprs else {"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "Exists"}]})
        if terms or draw(st.booleans()):
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": terms or [
                {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]}]}}
        ref = draw(st.sampled_from([None, "data", "other"]))
        if ref:
            spec["claimRef"] = {"namespace": "default", "name": ref}
        meta: dict[str, Any] = {"name": f"pv-{i}", "labels": {"tier": draw(st.sampled_from(["fast", "slow"]))}}
        if draw(st.integers(0, 9)) == 0:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        out.append({"kind": "PersistentVolume", "metadata": meta, "spec": spec,
                    "status": {"phase": draw(st.sampled_from(["Available", "Available", "Bound", "Released"]))}})
    return out


@st.composite
def local_volumes(draw: Any) -> list[dict[str, Any]]:
    """Mostly volumes the claims below could take: free local volumes of their class on one or
    two hostnames (some in a zone too), some reserved for a claim."""
    out = []
    for i in range(draw(st.integers(0, 12))):
        exprs = [{"key": "kubernetes.io/hostname", "operator": "In",
                  "values": draw(st.lists(st.sampled_from(HOSTS), min_size=1, max_size=2, unique=True))}]
        if draw(st.integers(0, 3)) == 0:
            exprs.append({"key": "topology.kubernetes.io/zone", "operator": "In", "values": [draw(st.sampled_from(ZONES))]})
        spec: dict[str, Any] = {"capacity": {"storage": f"{draw(st.sampled_from([5, 10, 20]))}Gi"},
                                "accessModes": ["ReadWriteOnce", "ReadWriteMany"], "storageClassName": "local",
                                "volumeMode": "Filesystem",
                                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}}
        ref = draw(st.sampled_from([None, None, None, "data", "other"]))
        if ref:
            spec["claimRef"] = {"namespace": "default", "name": ref}
        out.append({"kind": "PersistentVolume", "metadata": {"name": f"pv-{i}", "labels": {"tier": "fast"}},
                    "spec": spec, "status": {"phase": "Available"}})
    return out


claims = st.builds(
    lambda size, modes, mode, selector: {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default", "uid": "u1"},
        "spec": {"accessModes": modes, "storageClassName": "local", "volumeMode": mode,
                 "resources": {"requests": {"storage": f"{size}Gi"}},
                 **({"selector": {"matchLabels": {"tier": selector}}} if selector else {})}},
    st.sampled_from([1, 5, 10, 15]), st.sampled_from([["ReadWriteOnce"], ["ReadWriteMany"]]),
    st.sampled_from(["Filesystem", "Block"]), st.sampled_from([None, "fast"]))

nodes = st.fixed_dictionaries({"kubernetes.io/hostname": st.sampled_from([*HOSTS, "n4"]),
                               "topology.kubernetes.io/zone": st.sampled_from(ZONES)})


@settings(max_examples=400, deadline=None)
@given(volumes(), claims, nodes, st.sets(st.sampled_from([f"pv-{i}" for i in range(12)]), max_size=3))
def test_candidates_give_the_same_volume_as_the_full_search(
        all_volumes: list[dict[str, Any]], claim: dict[str, Any], labels: dict[str, str], excluded: set[str]) -> None:
    chosen = dict.fromkeys(excluded, {})
    full = find_matching_volume(claim, all_volumes, labels, chosen, True)
    fast = find_matching_volume(claim, CandidateVolumes(claim, all_volumes).for_node(labels), labels, chosen, True)
    assert (full or {}).get("metadata", {}).get("name") == (fast or {}).get("metadata", {}).get("name")


CLAIMS = [
    {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default", "uid": "u1"},
     "spec": {"accessModes": modes, "storageClassName": "local", "volumeMode": "Filesystem",
              "resources": {"requests": {"storage": size}}, **extra}}
    for name, modes, size, extra in [
        ("data", ["ReadWriteOnce"], "5Gi", {}),
        ("other", ["ReadWriteOnce"], "5Gi", {}),  # the same shape as "data", another claim
        ("data", ["ReadWriteMany"], "1Gi", {"selector": {"matchLabels": {"tier": "fast"}}}),
    ]
]


def _names(entries: list[tuple[Any, dict[str, Any]]]) -> list[str]:
    return [v["metadata"]["name"] for _, v in entries]


def _same(got: CandidateVolumes, want: CandidateVolumes, code: dict[str, int], values: list[str]) -> None:
    """``got`` files what ``want`` files, and its host flags for the coding (``code``, ``values``)
    are what ``want``'s sets say."""
    assert _names(got.general) == _names(want.general)
    assert {h: _names(e) for h, e in got.by_hostname.items()} == {h: _names(e) for h, e in want.by_hostname.items()}
    assert got.hostname_only == want.hostname_only
    assert got.hostnames_for_any_node() == want.hostnames_for_any_node()
    has, only = got.host_flags(code, values)
    assert list(has) == [*(h in want.by_hostname for h in values), False]
    assert list(only) == [*(h in want.hostnames_for_any_node() for h in values), False]
    for host in [*HOSTS, "n4"]:
        for zone in ZONES:
            labels = {"kubernetes.io/hostname": host, "topology.kubernetes.io/zone": zone}
            assert [v["metadata"]["name"] for v in got.for_node(labels)] == \
                [v["metadata"]["name"] for v in want.for_node(labels)]


@pytest.mark.parametrize("refile_all_above", [64, 0])
@settings(max_examples=150, deadline=None, derandomize=True)
@given(steps=st.lists(st.tuples(st.one_of(volumes(), local_volumes()), st.lists(st.integers(0, 11), max_size=4),
                                st.lists(st.sampled_from([*HOSTS, "n4"]), max_size=2), st.booleans(),
                                st.integers(0, 12)),
                      min_size=1, max_size=5))
def test_the_index_gives_the_candidates_of_a_fresh_search(refile_all_above: int, steps: list) -> None:
    """CandidateIndex, kept across changing volume sets (volumes changed, kept as the same object,
    or gone), files every claim's candidates as a fresh CandidateVolumes over the volumes of the
    claim's class in name order; its host flags follow a coding of hostnames that grows (or is
    replaced) between cycles; and candidates given out earlier (still held) stay as they were."""
    index = CandidateIndex(VolumeFacts.of)
    index.REFILE_ALL_ABOVE = refile_all_above
    previous: dict[str, dict[str, Any]] = {}
    code: dict[str, int] = {}
    values: list[str] = []
    held: list[tuple[CandidateVolumes, CandidateVolumes]] = []  # (given out, what it was then)
    for drawn, kept, coded, new_coding, limit in steps:
        current = {v["metadata"]["name"]: v for v in drawn[:limit]}  # the others are gone
        for i in kept:  # some volumes stay the very same objects (unchanged between cycles)
            name = f"pv-{i}"
            if name in previous and name in current:
                current[name] = previous[name]
        previous = current
        if new_coding:  # a node table rebuilt: another coding
            code, values = {}, []
        for host in coded:  # hostnames of nodes added: coded from now on
            if host not in code:
                code[host] = len(values)
                values.append(host)
        index.sync(list(current.values()))
        for claim in CLAIMS:
            got = index.candidates(claim)
            ordered = [current[n] for n in sorted(current) if claim_class(current[n]) == claim_class(claim)]
            want = CandidateVolumes(claim, ordered)
            _same(got, want, code, values)
            held.append((got, want))
        for got, want in held:
            _same(got, want, code, values)


class _Handle:
    """What AssumeCache reads of a handle: the informers' objects and their changes (here the
    embedded object store's, whose journal tells the changes)."""

    def __init__(self, store: ObjectStore) -> None:
        self.get, self.list, self.changes = store.get, store.list, store.changes


def _assumed_copy(volume: dict[str, Any], ref: str) -> dict[str, Any]:
    """``volume`` as Reserve assumes it: claimRef set, the stored resourceVersion kept."""
    return {**volume, "spec": {**volume["spec"], "claimRef": {"namespace": "default", "name": ref, "uid": "u1"}}}


step = st.one_of(
    st.tuples(st.just("put"), st.one_of(volumes(), local_volumes())),  # creates or updates each volume drawn
    st.tuples(st.just("delete"), st.integers(0, 11)),
    st.tuples(st.just("assume"), st.integers(0, 11), st.sampled_from(["data", "other"])),
    st.tuples(st.just("restore"), st.integers(0, 11)),
    st.tuples(st.just("get"), st.integers(0, 11)),  # may drop an assumption the store moved past
    st.tuples(st.just("sync")),
)


@pytest.mark.parametrize("slack", [journal.COMPACT_SLACK, 0])
@settings(max_examples=300, deadline=None, derandomize=True)
@given(steps=st.lists(step, min_size=1, max_size=25))
def test_the_index_kept_from_the_assume_caches_changes_holds_what_it_lists(steps: list, slack: int) -> None:
    """A CandidateIndex updated from ``AssumeCache.changes`` (the store's journal plus the
    assumptions made, restored or dropped) holds exactly the volumes ``AssumeCache.current``
    lists, the very objects, and files the same candidates as one synced from that list, for
    random volumes written, deleted, assumed (claimRef set) and restored between cycles; with
    ``slack`` 0 the journal compacts itself often (then a reader of an older mark reads all)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(journal, "COMPACT_SLACK", slack)
        _index_follows_the_changes(steps, slack)


def _index_follows_the_changes(steps: list, slack: int) -> None:
    store = ObjectStore(lambda: 0.0)
    fast_cache = AssumeCache(cast(Any, _Handle(store)), "PersistentVolume")
    plain_cache = AssumeCache(cast(Any, _Handle(store)), "PersistentVolume")
    fast, plain = CandidateIndex(VolumeFacts.of), CandidateIndex(VolumeFacts.of)
    told = 0
    for op, *args in [*steps, ("sync",)]:
        if op == "put":
            for volume in args[0]:
                name = volume["metadata"]["name"]
                if store.get("PersistentVolume", None, name) is None:
                    store.create(volume)
                else:
                    store.update(volume)
        elif op == "delete":
            if store.get("PersistentVolume", None, f"pv-{args[0]}") is not None:
                store.remove("PersistentVolume", None, f"pv-{args[0]}")
        elif op == "assume":  # the same assumed object in both
            seen = fast_cache.get(None, f"pv-{args[0]}")
            assert seen is plain_cache.get(None, f"pv-{args[0]}")
            if seen is not None:
                assumed = _assumed_copy(seen, args[1])
                fast_cache.assume(assumed)
                plain_cache.assume(assumed)
        elif op == "restore":
            for cache in (fast_cache, plain_cache):
                seen = cache.get(None, f"pv-{args[0]}")
                if seen is not None:
                    cache.restore(seen)
        elif op == "get":
            for cache in (fast_cache, plain_cache):
                cache.get(None, f"pv-{args[0]}")
        else:
            changed = fast_cache.changes()
            if changed is None:
                fast.sync(fast_cache.current())
            else:
                told += 1
                fast.update(changed)
            listed = plain_cache.current()
            plain.sync(listed)
            assert len(fast) == len(listed)
            by_name = {v["metadata"]["name"]: v for v in listed}
            for name, volume in by_name.items():
                assert fast.get(name) is volume
            for claim in CLAIMS:
                got, want = fast.candidates(claim), plain.candidates(claim)
                assert _names(got.general) == _names(want.general)
                assert {h: _names(e) for h, e in got.by_hostname.items()} == \
                    {h: _names(e) for h, e in want.by_hostname.items()}
                assert got.hostname_only == want.hostname_only
                assert got.hostnames_for_any_node() == want.hostnames_for_any_node()
    if slack:  # no compaction: only the first sync reads everything
        assert told == sum(1 for s in steps if s[0] == "sync")


def test_the_journal_forgets_deleted_objects_once_they_pile_up() -> None:
    """Keys of deleted objects do not pile up for ever: past twice the live objects plus the
    slack, the journal starts afresh and a reader of an older mark is told to read everything."""
    store = ObjectStore(lambda: 0.0)
    mark, _ = store.changes("PersistentVolume", None)
    for i in range(3 * journal.COMPACT_SLACK):
        store.create(make_pv(f"gone-{i}"))
        store.remove("PersistentVolume", None, f"gone-{i}")
    store.create(make_pv("kept"))
    assert store.changes("PersistentVolume", mark)[1] is None  # compacted since: read everything
    held = store._journal._kinds["PersistentVolume"]._entries
    assert len(held) <= journal.COMPACT_SLACK + 2
    mark, _ = store.changes("PersistentVolume", None)
    store.remove("PersistentVolume", None, "kept")
    assert store.changes("PersistentVolume", mark)[1] == ["kept"]
