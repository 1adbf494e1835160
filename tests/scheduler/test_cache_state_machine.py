"""Stateful property test: the cache's incrementally maintained node table always equals a table
rebuilt from scratch, requested resources equal the sum of the pods placed on each node, and the
journal of node changes names every node that changed."""

from __future__ import annotations

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kubesched.scheduler.cache import Cache
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.podgroups import PodGroups
from kubesched.testkit.builders import make_node, make_pod

NODES = [f"n{i}" for i in range(4)]


LABEL_KEYS = ("topology.kubernetes.io/zone", "tier", "kubernetes.io/hostname")


def pod_info(name: str, node: str, cpu: int, mem: int, priority: int = 0, host_port: int = 0) -> PodInfo:
    obj = make_pod(name, f"{cpu}m", f"{mem}Mi", uid=f"uid-{name}", node=node, priority=priority)
    if host_port:
        obj["spec"]["containers"][0]["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    return PodInfo.from_pod(obj)


class CacheMachine(RuleBasedStateMachine):
    @initialize()
    def setup(self) -> None:
        self.cache = Cache()
        self.pods: dict[str, PodInfo] = {}
        self.assumed: set[str] = set()
        self.counter = 0
        self.mark: int | None = None
        self.seen: dict[str, tuple[object, int]] = {}  # node -> (its NodeInfo, generation) at the last look

    @rule(name=st.sampled_from(NODES), cpu=st.integers(1, 16), zone=st.sampled_from(["a", "b", ""]),
          tier=st.sampled_from(["1", "2", "x", ""]))
    def add_or_update_node(self, name: str, cpu: int, zone: str, tier: str) -> None:
        labels = {"topology.kubernetes.io/zone": zone} if zone else {}
        if tier:
            labels["tier"] = tier
        self.cache.add_node(make_node(name, cpu=str(cpu), labels=labels))
        self.cache.update_snapshot()

    @rule(node=st.sampled_from(NODES), cpu=st.integers(0, 2000), mem=st.integers(0, 4096), assume=st.booleans(),
          priority=st.sampled_from([-5, 0, 100, 1000]), host_port=st.sampled_from([0, 0, 80]))
    def place_pod(self, node: str, cpu: int, mem: int, assume: bool, priority: int, host_port: int) -> None:
        self.counter += 1
        pod = pod_info(f"p{self.counter}", node, cpu, mem, priority, host_port)
        if assume:
            self.cache.assume(pod, node)
            self.assumed.add(pod.uid)
        else:
            self.cache.add_pod(pod)
        self.pods[pod.uid] = pod

    @precondition(lambda self: bool(self.assumed))
    @rule(data=st.data())
    def forget_or_confirm(self, data: st.DataObject) -> None:
        uid = data.draw(st.sampled_from(sorted(self.assumed)))
        self.assumed.discard(uid)
        if data.draw(st.booleans()):
            self.cache.forget(self.pods.pop(uid))
        else:
            self.cache.add_pod(self.confirmed(self.pods[uid], data))

    def confirmed(self, pod: PodInfo, data: st.DataObject) -> PodInfo:
        """The pod as the informer brings it: the same object, a new one alike (as after the
        binding) or one with other requests or labels."""
        how = data.draw(st.sampled_from(["same", "alike", "other cpu", "other labels"]))
        if how == "same":
            return pod
        obj = {**pod.obj, "metadata": dict(pod.obj["metadata"]), "spec": dict(pod.obj["spec"])}
        if how == "other cpu":
            obj["spec"]["containers"] = [{**obj["spec"]["containers"][0],
                                          "resources": {"requests": {"cpu": "7m", "memory": "1Mi"}}}]
        elif how == "other labels":
            obj["metadata"]["labels"] = {"tier": "other"}
        new = PodInfo.from_pod(obj)
        self.pods[pod.uid] = new
        return new

    @precondition(lambda self: bool(self.pods))
    @rule(data=st.data())
    def remove_pod(self, data: st.DataObject) -> None:
        uid = data.draw(st.sampled_from(sorted(self.pods)))
        self.assumed.discard(uid)
        self.cache.remove_pod(self.pods.pop(uid))

    @precondition(lambda self: bool(self.cache.nodes))
    @rule(data=st.data())
    def remove_node(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.cache.nodes)))
        self.cache.remove_node(make_node(name))

    @invariant()
    def node_changes_name_every_changed_node(self) -> None:
        """The journal names every node added, removed or whose NodeInfo's generation moved since
        the last look (what NUMA foreign-pod detection relies on)."""
        self.mark, names = self.cache.node_changes(self.mark)
        now = {name: (info, info.generation) for name, info in self.cache.nodes.items()}
        if names is not None:
            changed = {n for n in now.keys() | self.seen.keys()
                       if n not in now or n not in self.seen or now[n][0] is not self.seen[n][0]
                       or now[n][1] != self.seen[n][1]}
            assert changed <= set(names)
        self.seen = now

    @invariant()
    def table_matches_rebuild(self) -> None:
        self.cache.update_snapshot()
        nodes = self.cache.node_infos
        fresh = NodeTable()
        saved = [n.index for n in nodes]
        fresh.rebuild(nodes)
        assert [n.index for n in nodes] == saved
        table = self.cache.table
        for resource, row in fresh.row.items():
            assert np.array_equal(table.alloc[table.row[resource]], fresh.alloc[row])
            assert np.array_equal(table.requested[table.row[resource]], fresh.requested[row])
        assert np.array_equal(table.pod_count, fresh.pod_count)
        assert np.array_equal(table.nonzero, fresh.nonzero)
        assert np.array_equal(table.has_ports, fresh.has_ports)
        for priority in (0, 100, 2000):
            got_req, got_count = table.below_priority(priority)
            want_req, want_count = fresh.below_priority(priority)
            assert np.array_equal(got_count, want_count)
            for resource, row in fresh.row.items():
                assert np.array_equal(got_req[table.row[resource]], want_req[row])

    @invariant()
    def label_columns_and_ports_match_the_nodes(self) -> None:
        """Columns built in an earlier step were kept in step by node updates, not rebuilt."""
        self.cache.update_snapshot()
        table = self.cache.table
        nodes = self.cache.node_infos
        assert table.has_ports.tolist() == [bool(n.used_ports) for n in nodes]
        for key in LABEL_KEYS:
            column = table.label_column(key)
            assert column is not None
            decoded = [column.values[c] if c >= 0 else None for c in column.codes.tolist()]
            assert decoded == [n.labels.get(key) for n in nodes]
        assert [table.node_index(n.name) for n in nodes] == list(range(len(nodes)))

    @invariant()
    def pod_groups_match_the_pods(self) -> None:
        """The pods grouped by namespace and labels, kept in step, equal groups made afresh."""
        self.cache.update_snapshot()

        def groups(pod_groups: PodGroups) -> dict:
            return {(ns, tuple(sorted(labels.items()))): dict(zip(where.tolist(), counts.tolist()))
                    for ns, labels, where, counts in pod_groups.label_groups()}

        assert groups(self.cache.table.pod_groups()) == groups(PodGroups(self.cache.node_infos))

    @invariant()
    def requested_is_sum_of_pods(self) -> None:
        for info in self.cache.node_infos:
            cpu = sum(p.requests.get("cpu", 0) for p in info.pods)
            assert info.requested.get("cpu", 0) == cpu
            expected = {p.uid for p in self.pods.values() if p.node_name == info.name}
            assert {p.uid for p in info.pods} == expected


CacheMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None, derandomize=True)
TestCache = CacheMachine.TestCase


def table_equals_rebuild(cache: Cache) -> bool:
    cache.update_snapshot()
    fresh = NodeTable()
    fresh.rebuild(cache.node_infos)
    table = cache.table
    return all(np.array_equal(table.requested[table.row[r]], fresh.requested[row]) for r, row in fresh.row.items()) \
        and np.array_equal(table.nonzero, fresh.nonzero) and np.array_equal(table.pod_count, fresh.pod_count)


def test_a_confirmed_pod_counts_as_its_new_version() -> None:
    """The binding's version of an assumed pod, or a later update, replaces the old one in the node
    table whether it counts alike (table left as it is) or not (table updated)."""
    for change in ("alike", "cpu", "labels"):
        cache = Cache()
        cache.add_node(make_node("n0", cpu="8"))
        cache.update_snapshot()
        cache.table.pod_groups()  # kept in step from here on
        pod = pod_info("a", "n0", 500, 100)
        cache.assume(pod, "n0")
        cache.update_snapshot()
        obj = {**pod.obj, "metadata": dict(pod.obj["metadata"]), "spec": dict(pod.obj["spec"])}
        if change == "cpu":
            obj["spec"]["containers"] = [{**obj["spec"]["containers"][0], "resources": {"requests": {"cpu": "7m"}}}]
        elif change == "labels":
            obj["metadata"]["labels"] = {"tier": "web"}
        cache.add_pod(PodInfo.from_pod(obj))
        assert table_equals_rebuild(cache), change
        groups = {(ns, tuple(sorted(labels.items()))) for ns, labels, _, _ in cache.table.pod_groups().label_groups()}
        assert groups == {("default", tuple(sorted(obj["metadata"].get("labels", {}).items())))}, change
