"""CrossNodePreemption against brute force on small generated clusters.

A cluster of at most 6 nodes (4 cpu each) in 2-3 zones, at most 12 running pods (priorities, an
``app`` label, some with required anti-affinity against P per zone or hostname, distinct start
times), a few PodDisruptionBudgets, and one preemptor P (priority 1000, ``app: web``) with 0-2
required anti-affinity terms (per zone or hostname) and/or a hard spread constraint over zones,
that fits no node. The scheduler's first preemption decision for P is checked against a model of
the filters that matter (NodeResourcesFit's cpu, InterPodAffinity's anti-affinity both ways,
PodTopologySpread's skew over zones) and *every* subset of the cluster's lower-priority pods, on
every node:

- a candidate exists exactly when some victim set (on any nodes) lets P fit on some node;
- the chosen victims let P fit on the chosen node, and none of them could be spared;
- the chosen set's PDB violations are as the budgets count them for that set;
- where some feasible set violates no budget, the chosen set violates none either, and the most
  important victim is as unimportant as any feasible set allows;

Optimality of the whole node-choice key (then the priority sum and the count) is not asserted: the
reprieve is DefaultPreemption's greedy one, extended to the pods elsewhere (docs/preemption.md
describes the gap); the test records how often the chosen set is optimal (``event``).

``KUBESCHED_CROSS_NODE_EXAMPLES`` sets the number of examples (150 by default).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, assume, event, example, given, seed, settings
from hypothesis import strategies as st

from kubesched.testkit.builders import (
    make_node,
    make_pdb,
    make_pod,
    make_priority_class,
    make_scheduler_config,
)
from kubesched.testkit.runs import run_docs
from kubesched.testkit.scenarios import create_step, scenario_document

HOSTNAME, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
PRIORITIES = [0, 100, 500, 1000, 2000]
P_PRIORITY = 1000
NODE_CPU = 4
INT32_OFFSET = 2**31
APPS = ["a", "b", "web"]
EXAMPLES = int(os.environ.get("KUBESCHED_CROSS_NODE_EXAMPLES", "150"))


@dataclass(frozen=True)
class Pod:
    name: str
    priority: int
    cpu: int
    node: int
    app: str
    anti: str | None  # the topology key of its required anti-affinity against app=web, if any


@dataclass(frozen=True)
class Cluster:
    zones: tuple[str, ...]  # per node
    pods: tuple[Pod, ...]  # in start-time order: the earlier the more important among equals
    pdbs: tuple[tuple[str, int], ...]  # (app, minAvailable)
    p_cpu: int
    terms: tuple[tuple[str, str], ...]  # P's anti-affinity: (app, topology key)
    spread: tuple[str, int] | None  # P's spread over zones: (selected app, maxSkew)

    def value(self, n: int, key: str) -> str:
        return self.zones[n] if key == ZONE else f"n{n}"


class Model:
    """Feasibility of every (subset of the lower-priority pods, node), by arrays."""

    def __init__(self, c: Cluster) -> None:
        self.c = c
        nodes = len(c.zones)
        self.lower = [p for p in c.pods if p.priority < P_PRIORITY]
        self.high = [p for p in c.pods if p.priority >= P_PRIORITY]
        m = len(self.lower)
        self.masks = ((np.arange(2**m)[:, None] >> np.arange(m)[None, :]) & 1).astype(np.int64)
        M = self.masks

        def per_node(pods: list[Pod], f: Any) -> np.ndarray:
            return np.array([[f(p, n) for n in range(nodes)] for p in pods], dtype=np.int64).reshape(len(pods), nodes)

        cpu_on = per_node(c.pods, lambda p, n: p.cpu if p.node == n else 0).sum(axis=0)
        cpu_low = per_node(self.lower, lambda p, n: p.cpu if p.node == n else 0)
        ok = (cpu_on[None, :] - M @ cpu_low + c.p_cpu) <= NODE_CPU

        def blocks(p: Pod, n: int) -> int:
            own = p.anti is not None and c.value(p.node, p.anti) == c.value(n, p.anti)
            theirs = any(p.app == app and c.value(p.node, key) == c.value(n, key) for app, key in c.terms)
            return int(own or theirs)

        blocked = per_node(c.pods, blocks).sum(axis=0)
        ok &= (blocked[None, :] - M @ per_node(self.lower, blocks)) == 0
        if c.spread is not None:
            app, max_skew = c.spread
            zones = sorted(set(c.zones))
            base = np.array([sum(1 for p in c.pods if p.app == app and c.zones[p.node] == z) for z in zones])
            low = np.array([[int(p.app == app and c.zones[p.node] == z) for z in zones] for p in self.lower],
                           dtype=np.int64).reshape(m, len(zones))
            counts = base[None, :] - M @ low
            own = np.array([zones.index(z) for z in c.zones])
            self_match = int(app == "web")
            ok &= counts[:, own] + self_match - counts.min(axis=1)[:, None] <= max_skew
        self.ok = ok  # [mask, node]
        # each pod is in at most one budget (by its app label)
        allowed = {app: max(0, sum(1 for p in c.pods if p.app == app) - minimum) for app, minimum in c.pdbs}
        in_budget = np.array([[int(p.app == app) for app in allowed] for p in self.lower],
                             dtype=np.int64).reshape(m, len(allowed))
        self.violations = np.maximum(M @ in_budget - np.array(list(allowed.values()), dtype=np.int64), 0).sum(axis=1)
        prio = np.array([p.priority for p in self.lower], dtype=np.int64)
        self.top = np.where(M.astype(bool), prio[None, :], np.iinfo(np.int64).min).max(axis=1, initial=np.iinfo(
            np.int64).min)
        self.sums = M @ (prio + INT32_OFFSET)
        self.count = M.sum(axis=1)

    def mask_of(self, names: set[str]) -> int:
        return sum(1 << k for k, p in enumerate(self.lower) if p.name in names)

    def key(self, mask: int) -> tuple[int, int, int, int]:
        """The node-choice criteria of a victim set, higher better."""
        return (-int(self.violations[mask]), -int(self.top[mask]), -int(self.sums[mask]), -int(self.count[mask]))


# -- generation ------------------------------------------------------------------------------------
@st.composite
def clusters(draw: Any) -> Cluster:
    n_zones = draw(st.integers(2, 3))
    nodes = draw(st.integers(2, 6))
    zones = tuple(f"z{draw(st.integers(0, n_zones - 1))}" for _ in range(nodes))
    raw = draw(st.lists(st.tuples(st.sampled_from([0, 100, 100, 500, 2000]), st.integers(1, 3),
                                  st.integers(0, nodes - 1), st.sampled_from(APPS),
                                  st.sampled_from([None, None, None, ZONE, HOSTNAME])),
                        min_size=1, max_size=12))
    used = [0] * nodes
    pods = []
    for prio, cpu, n, app, anti in raw:
        if used[n] + cpu <= NODE_CPU:  # running pods fit their nodes
            used[n] += cpu
            pods.append(Pod(f"r{len(pods)}", prio, cpu, n, app, anti))
    pdbs = tuple(draw(st.lists(st.tuples(st.sampled_from(APPS), st.integers(0, 2)), max_size=2,
                               unique_by=lambda t: t[0])))
    terms = tuple(draw(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from([ZONE, ZONE, HOSTNAME])),
                                max_size=2, unique_by=lambda t: t)))
    spread = draw(st.one_of(st.none(), st.tuples(st.sampled_from(["web", "web", "a"]), st.integers(1, 2))))
    return Cluster(zones, tuple(pods), pdbs, draw(st.integers(1, 3)), terms, spread)


def documents(c: Cluster) -> list[dict]:
    docs: list[dict] = [make_priority_class(f"p{v}", v) for v in PRIORITIES]
    for n, zone in enumerate(c.zones):
        docs.append(make_node(f"n{n}", cpu=str(NODE_CPU), memory="32Gi", labels={ZONE: zone}))
    for k, p in enumerate(c.pods):
        extra: dict[str, Any] = {}
        if p.anti is not None:
            extra["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": p.anti}]}}
        docs.append(make_pod(p.name, str(p.cpu), None, priority_class=f"p{p.priority}", node=f"n{p.node}",
                             labels={"app": p.app}, grace=30, start_time=f"2024-01-01T00:00:{k:02d}Z", **extra))
    for app, min_available in c.pdbs:
        docs.append(make_pdb(f"pdb-{app}", {"matchLabels": {"app": app}}, min_available=min_available))
    spec: dict[str, Any] = {}
    if c.terms:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key} for app, key in c.terms]}}
    if c.spread is not None:
        spec["topologySpreadConstraints"] = [{"maxSkew": c.spread[1], "topologyKey": ZONE,
                                              "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": {"matchLabels": {"app": c.spread[0]}}}]
    preemptor = make_pod("p", str(c.p_cpu), None, priority_class=f"p{P_PRIORITY}", labels={"app": "web"}, **spec)
    config = make_scheduler_config({"schedulerName": "default-scheduler", "plugins": {"multiPoint": {
        "enabled": [{"name": "CrossNodePreemption"}], "disabled": [{"name": "DefaultPreemption"}]}}})
    docs.append(scenario_document(steps=[create_step(1, preemptor)], until="1s", name="brute", config=config))
    return docs


@seed(20261129)
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much,
                                 HealthCheck.too_slow])
@given(c=clusters())
# found at 2000 examples before violations were counted over the victim set: r3 (zone anti-affinity
# against P) is the only victim needed on n0-n5 but the reprieve labelled it violating (r2 spent
# the web budget first), so n3's r4, truly violating, tied with it and won
@example(c=Cluster(zones=("z0", "z0", "z0", "z1", "z0", "z0"), pods=(
    Pod("r0", 0, 1, 0, "a", None), Pod("r1", 0, 1, 0, "a", None), Pod("r2", 0, 1, 0, "web", None),
    Pod("r3", 0, 1, 0, "web", ZONE), Pod("r4", 0, 2, 3, "b", None)),
    pdbs=(("b", 1), ("web", 1)), p_cpu=1, terms=(("b", ZONE),), spread=("web", 2)))
def test_victims_across_nodes_against_every_subset(tmp_path: Path, c: Cluster) -> None:
    model = Model(c)
    assume(not model.ok[0].any())  # P fits nowhere as things are
    run = run_docs(tmp_path, documents(c), explain=True)
    [decision] = [d for d in run.decisions("p") if d["time"] == 1.0]
    feasible = model.ok.any(axis=1)
    if decision["chosen"] is None:
        event("no candidate")
        assert not feasible.any(), f"no candidate, although removing {np.flatnonzero(feasible)[:1]} would do"
        return
    [chosen] = [cand for cand in decision["candidates"] if cand["node"] == decision["chosen"]]
    names = {v["pod"].split("/")[1] for v in chosen["victims"]}
    mask = model.mask_of(names)
    assert len(names) == bin(mask).count("1"), f"victims {names} are not all lower-priority pods"
    n = int(decision["chosen"][1:])
    assert model.ok[mask, n], f"victims {sorted(names)} do not let P fit on n{n}"
    for k in range(len(model.lower)):
        if mask >> k & 1:
            assert not model.ok[mask & ~(1 << k), n], f"{model.lower[k].name} could be spared on n{n}"
    assert chosen["pdbViolations"] == int(model.violations[mask])
    cross = any(p.node != n for p in model.lower if p.name in names)
    event("victims on other nodes" if cross else "victims on the chosen node only")
    keys = [model.key(s) for s in np.flatnonzero(feasible)]
    best = max(keys)
    mine = model.key(mask)
    if best[0] == 0:
        assert mine[0] == 0, f"victims {sorted(names)} violate a budget, a feasible set does not"
    if model.violations[-1] == 0:  # no budget in the way: the reprieve goes in importance order
        assert mine[1] == best[1], "a set with a less important most important victim would do"
    event("optimal (violations, top priority, sum, count)" if mine == best else "not optimal on sum or count")
