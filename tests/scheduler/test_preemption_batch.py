"""DefaultPreemption's batched dry run (victims reprieved on many nodes at once, chunk by chunk in
the dry run's node order) chooses exactly what the node-by-node dry run chooses: the same
candidates, victims, PDB violations, statuses and nominations, in simulations with PDBs, nominated
pods, pods started at different times, taints and few candidates per chunk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from kubesched.scheduler.framework.candidates import Candidate
from kubesched.scheduler.plugins.defaultpreemption import DefaultPreemption
from kubesched.sim import simulate
from kubesched.testkit.builders import (
    make_node,
    make_pdb,
    make_pod,
    make_priority_class,
    make_scheduler_config,
    make_taint,
)
from kubesched.testkit.runs import explained_json
from kubesched.testkit.scenarios import create_step, scenario_document

PRIORITIES = [0, 100, 500, 1000]
APPS = ["a", "b", "c"]

# (priority, cpu, node, app, start second) of a running pod; (priority, cpu, app, arrival) of a pending one
running_st = st.tuples(st.sampled_from(PRIORITIES), st.integers(1, 3), st.integers(0, 11), st.sampled_from(APPS),
                       st.integers(0, 3))
pending_st = st.tuples(st.sampled_from(PRIORITIES[1:]), st.integers(1, 4), st.sampled_from(APPS), st.integers(0, 30))


def scenario(nodes: int, tainted: int, running: list, pending: list, pdbs: list, absolute: int,
             taints_last: bool = False, grace: int = 5) -> list[dict]:
    """``taints_last``: TaintToleration filters after NodeResourcesFit, so a full tainted node is
    rejected for its resources first and is a potential node of the dry run. ``grace``: the
    running pods' termination grace period (0: a victim is gone at once, and the next preemptor of
    the same instant sees its node without it)."""
    docs: list[dict] = [make_priority_class(f"p{v}", v) for v in PRIORITIES]
    for i in range(nodes):
        taints = [make_taint("dedicated", "x", "NoSchedule")] if i < tainted else None
        docs.append(make_node(f"n{i}", cpu="4", pods=5, taints=taints))
    for i, (prio, cpu, node, app, started) in enumerate(running):
        docs.append(make_pod(f"r{i}", str(cpu), "1Gi", priority_class=f"p{prio}", node=f"n{node % nodes}",
                             labels={"app": app}, grace=grace, start_time=f"2024-01-01T00:00:0{started}Z"))
    for app, allowed in pdbs:
        docs.append(make_pdb(f"pdb-{app}", {"matchLabels": {"app": app}}, max_unavailable=allowed))
    steps = [create_step(at, make_pod(f"q{i}", str(cpu), "1Gi", priority_class=f"p{prio}", labels={"app": app}))
             for i, (prio, cpu, app, at) in enumerate(pending)]
    profile = {"schedulerName": "default-scheduler", "pluginConfig": [{
        "name": "DefaultPreemption",
        "args": {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": absolute}}]}
    if taints_last:
        profile["plugins"] = {"filter": {"disabled": [{"name": "TaintToleration"}],
                                         "enabled": [{"name": "TaintToleration"}]}}
    docs.append(scenario_document(steps=steps, until="90s", seed=3, name="batch",
                                  config=make_scheduler_config(profile)))
    return docs


EXAMPLES_SEED = 20261125


@seed(EXAMPLES_SEED)
@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nodes=st.integers(2, 12), tainted=st.integers(0, 2), running=st.lists(running_st, max_size=30),
       pending=st.lists(pending_st, min_size=1, max_size=8),
       pdbs=st.lists(st.tuples(st.sampled_from(APPS), st.integers(0, 2)), max_size=2, unique_by=lambda t: t[0]),
       absolute=st.integers(1, 4), taints_last=st.booleans(), grace=st.sampled_from([0, 5]))
def test_batched_dry_run_equals_node_by_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nodes: int,
                                             tainted: int, running: list, pending: list, pdbs: list,
                                             absolute: int, taints_last: bool, grace: int) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all(scenario(nodes, tainted, running, pending, pdbs, absolute, taints_last,
                                                grace)))
    batched = explained_json(path)
    plain = json.dumps(simulate(str(path)).result)  # the records keep only the chosen candidates
    with monkeypatch.context() as m:
        # the reference: every node asked on its own, statuses included
        m.setattr(DefaultPreemption, "select_victims_on_nodes", lambda self, *args: None)
        m.setattr(DefaultPreemption, "removes_every_lower_priority_pod", property(lambda self: False))
        node_by_node = explained_json(path)
        plain_node_by_node = json.dumps(simulate(str(path)).result)
    assert batched == node_by_node
    assert plain == plain_node_by_node


def test_the_batch_decides_where_it_can(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above is not vacuous: on a plain preemption the batch answers for the nodes
    itself (no node is left to the per-node form), and the preemption happens."""
    answers: list[Any] = []
    original = DefaultPreemption.select_victims_on_nodes

    def spy(self: DefaultPreemption, *args: Any) -> Any:
        out = original(self, *args)
        answers.append(out)
        return out

    monkeypatch.setattr(DefaultPreemption, "select_victims_on_nodes", spy)
    running = [(0, 2, i, "a", 0) for i in range(6)] + [(100, 1, i, "b", 1) for i in range(6)]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all(scenario(6, 0, running, [(1000, 3, "c", 0)], [], 2)))
    result = simulate(str(path)).result
    assert answers and all(a is not None for a in answers)
    decided = [x for a in answers for x in a]
    listed = [(x.victims, x.violating) for x in decided if isinstance(x, Candidate)]
    assert listed and len(listed) == len(decided)
    assert all([p.name for p in victims] == ["r" + str(victims[0].name[1:])] and violating == []
               for victims, violating in listed)
    preemptions = [e for e in result["events"] if e["reason"] == "Preempted"]
    assert len(preemptions) == 1


def test_a_node_another_filter_rejects_is_no_candidate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With TaintToleration after NodeResourcesFit, a full tainted node holding the only possible
    victim is a potential node, but no candidate: nobody is preempted, as node by node."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all(scenario(2, 1, [(0, 3, 0, "a", 0), (1000, 3, 1, "b", 0)],
                                                [(500, 2, "c", 0)], [], 1, taints_last=True)))
    batched = explained_json(path)
    assert '"Preempted"' not in batched
    assert "1 node(s) had untolerated taint {dedicated: x}" in batched
    with monkeypatch.context() as m:
        m.setattr(DefaultPreemption, "select_victims_on_nodes", lambda self, *args: None)
        assert explained_json(path) == batched


def test_a_nodes_pods_by_importance_follow_its_changes() -> None:
    """The batch keeps each node's pods sorted by importance between preemptors: a pod added or
    removed at the same instant, or time moving on (a pod without a start time counts as starting
    now), is seen at once."""
    from kubesched.scheduler.framework.types import NodeInfo, PodInfo
    from kubesched.testkit.framework import FakeHandle

    def pod(name: str, prio: int, started: str | None) -> PodInfo:
        info = PodInfo.from_pod(make_pod(name, priority_class=None, start_time=started))
        info.priority = prio
        return info

    node = NodeInfo.from_node(make_node("n0"))
    old, new, unstarted = pod("old", 0, "2024-01-01T00:00:01Z"), pod("new", 0, "2024-01-01T00:00:05Z"), pod("u", 0, None)
    handle = FakeHandle([node], time=10.0)
    plugin = DefaultPreemption({}, handle)  # type: ignore[arg-type]
    node.add_pod(new)
    assert [p.name for p in plugin._node_order(node, 10.0).ordered] == ["new"]
    node.add_pod(old)
    node.add_pod(unstarted)
    assert [p.name for p in plugin._node_order(node, 10.0).ordered] == ["old", "new", "u"]
    node.remove_pod(old)
    assert [p.name for p in plugin._node_order(node, 10.0).ordered] == ["new", "u"]
    # an instant before "new" started: "u" counts as starting then, so it is the older one
    assert [p.name for p in plugin._node_order(node, new.start_time - 1).ordered] == ["u", "new"]
    # the pods of lower priority than a preemptor's are the end of that order, as filtering finds them
    for name, prio in (("hi", 10), ("mid", 5), ("mid2", 5), ("lo", -3)):
        node.add_pod(pod(name, prio, "2024-01-01T00:00:02Z"))
    ordered = plugin._node_order(node, 10.0).ordered
    for priority in (-4, -3, 0, 1, 5, 6, 10, 11):
        order = plugin._node_order(node, 10.0)
        assert order.ordered[order.cut(priority):] == [p for p in ordered if p.priority < priority]


def test_nodes_known_to_fail_get_their_statuses_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A preemptor too big for any node even with every lower-priority pod gone: each node's status
    (what the filters say once the victims are removed) comes from one vector pass, word for word
    what asking each node on its own gives."""
    from kubesched.scheduler.framework.filtering import FilterPoints

    calls: list[int] = []
    original = FilterPoints.removal_statuses

    def spy(self: FilterPoints, *args: Any) -> Any:
        out = original(self, *args)
        calls.append(len(out))
        return out

    monkeypatch.setattr(FilterPoints, "removal_statuses", spy)
    running = [(0, 2, i, "a", 0) for i in range(5)] + [(1000, 1, i, "b", 0) for i in range(5)]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all(scenario(5, 0, running, [(500, 4, "c", 0)], [], 2)))
    fast = explained_json(path)
    assert calls and max(calls) == 5
    assert "preemption: 0/5 nodes are available: 5 Insufficient cpu." in fast
    with monkeypatch.context() as m:
        m.setattr(DefaultPreemption, "removes_every_lower_priority_pod", property(lambda self: False))
        assert explained_json(path) == fast
