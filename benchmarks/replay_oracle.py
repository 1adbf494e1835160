"""Which of kube-scheduler's recorded decisions had one best node: an independent re-computation, from
the audit log alone, of what kube-scheduler v1.28's default profile saw when it made each decision.

It holds for the workload of ``replay_recorded.py`` only (bare pods with cpu/memory requests, no
affinity, taints, volumes, topology constraints or PDBs, nodes without images), where the default
profile's scores that differ between nodes are NodeResourcesFit (LeastAllocated over cpu and
memory, weight 1) and NodeResourceBalancedAllocation (weight 1); the others give every node the
same score. Formulas as upstream's ``least_allocated.go`` and ``balanced_allocation.go``:

- least(r) = (allocatable - requested) * 100 // allocatable (0 when over); fit = (least(cpu) + least(mem)) // 2
- balanced = int((1 - |f_cpu - f_mem| / 2) * 100), f = min(requested / allocatable, 1)

Decisions are taken in the order kube-scheduler made them: its binding requests by the time the API
server received them (``requestReceivedTimestamp``); the cluster a decision saw is the bindings
received before it, less the deletions received before it. A preemptor's decision is its
nomination (its ``pods/status`` write setting ``nominatedNodeName``): the candidate nodes are those
where the pod fits once every lower-priority pod is gone, each with the fewest victims (the lower
pods taken back, the most important first, while the pod still fits), and upstream's
``pickOneNodeForPreemption`` order: the lowest highest-victim priority, the lowest sum of victim
priorities, the fewest victims. The victims here have no start time (no kubelet), so upstream's
next criterion returns the first remaining candidate of its dry run, which starts at a random node:
more than one candidate left is a tie. Not modelled: other nominated pods' reservations during a
dry run, and kube-scheduler's cache lagging the API server by a watch event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.api.quantity import parse_quantity


@dataclass
class PodSpec:
    cpu: int  # millicores
    mem: int  # bytes
    priority: int


@dataclass
class Decision:
    pod: str
    node: str  # where kube-scheduler put it (bound or nominated)
    kind: str  # "score" or "preemption"
    best: list[str] = field(default_factory=list)  # the oracle's best nodes

    @property
    def verdict(self) -> str:
        if self.node not in self.best:
            return "oracle-differs"
        return "unique" if len(self.best) == 1 else "tie"


def requests_of(pod: dict[str, Any]) -> tuple[int, int]:
    cpu = mem = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        req = (c.get("resources") or {}).get("requests") or {}
        cpu += int(parse_quantity(req.get("cpu", "0")) * 1000)
        mem += int(parse_quantity(req.get("memory", "0")))
    return cpu, mem


class State:
    def __init__(self, nodes: dict[str, tuple[int, int, int]]) -> None:
        self.alloc = nodes  # name -> (cpu m, mem bytes, pods)
        self.on: dict[str, dict[str, PodSpec]] = {n: {} for n in nodes}
        self.where: dict[str, str] = {}

    def bind(self, pod: str, node: str, spec: PodSpec) -> None:
        if node in self.on:
            self.on[node][pod] = spec
            self.where[pod] = node

    def delete(self, pod: str) -> None:
        node = self.where.pop(pod, None)
        if node is not None:
            self.on[node].pop(pod, None)

    def _used(self, node: str, without: set[str] = frozenset()) -> tuple[int, int, int]:  # type: ignore[assignment]
        pods = [p for k, p in self.on[node].items() if k not in without]
        return sum(p.cpu for p in pods), sum(p.mem for p in pods), len(pods)

    def _fits(self, node: str, spec: PodSpec, used: tuple[int, int, int]) -> bool:
        cpu, mem, count = self.alloc[node]
        return used[0] + spec.cpu <= cpu and used[1] + spec.mem <= mem and used[2] + 1 <= count

    def best_by_score(self, spec: PodSpec) -> list[str]:
        totals: dict[str, int] = {}
        for node, (cpu, mem, _) in self.alloc.items():
            used = self._used(node)
            if not self._fits(node, spec, used):
                continue
            rc, rm = used[0] + spec.cpu, used[1] + spec.mem
            fit = ((cpu - rc) * 100 // cpu + (mem - rm) * 100 // mem) // 2
            fc, fm = min(rc / cpu, 1.0), min(rm / mem, 1.0)
            totals[node] = fit + int((1 - abs(fc - fm) / 2) * 100)
        top = max(totals.values(), default=None)
        return sorted(n for n, t in totals.items() if t == top)

    def best_for_preemption(self, spec: PodSpec) -> list[str]:
        keys: dict[str, tuple[int, int, int]] = {}
        for node in self.alloc:
            lower = {k: p for k, p in self.on[node].items() if p.priority < spec.priority}
            if not self._fits(node, spec, self._used(node, set(lower))):
                continue
            victims: list[PodSpec] = []
            removed = set(lower)
            # the most important first: higher priority, then (no start times) the bigger pods
            for key, p in sorted(lower.items(), key=lambda kv: (-kv[1].priority, -kv[1].cpu, kv[0])):
                removed.discard(key)
                if not self._fits(node, spec, self._used(node, removed)):
                    removed.add(key)
                    victims.append(p)
            if not victims:
                continue  # it fits without preemption: not a candidate of a failed cycle
            keys[node] = (max(v.priority for v in victims), sum(v.priority + 2**31 for v in victims), len(victims))
        top = min(keys.values(), default=None)
        return sorted(n for n, k in keys.items() if k == top)


def decisions(events: list[dict[str, Any]], namespace: str) -> tuple[list[Decision], dict[str, Decision]]:
    """Every scheduling decision of the log's pods in ``namespace``, classified; and each pod's last."""
    writes = sorted((e for e in events if e.get("stage") == "ResponseComplete"
                     and 200 <= ((e.get("responseStatus") or {}).get("code") or 0) < 300
                     and e.get("verb") in ("create", "update", "patch", "delete")),
                    key=lambda e: e["requestReceivedTimestamp"])
    nodes: dict[str, tuple[int, int, int]] = {}
    specs: dict[str, PodSpec] = {}
    nominated: dict[str, str] = {}
    out: list[Decision] = []
    state: State | None = None
    for e in writes:
        ref = e["objectRef"]
        res, sub, name = ref.get("resource"), ref.get("subresource"), ref.get("name") or ""
        if res == "nodes" and e["verb"] == "create" and not sub:
            alloc = e["responseObject"]["status"]["allocatable"]
            nodes[name] = (int(parse_quantity(alloc["cpu"]) * 1000), int(parse_quantity(alloc["memory"])),
                           int(alloc["pods"]))
            state = None
            continue
        if res != "pods" or ref.get("namespace") != namespace:
            continue
        if state is None:
            state = State(nodes)
        if name not in specs and not (e["verb"] == "create" and not sub):
            continue  # a pod created before the log begins
        if e["verb"] == "create" and not sub:
            obj = e["responseObject"]
            cpu, mem = requests_of(obj)
            specs[name] = PodSpec(cpu, mem, int(obj["spec"].get("priority") or 0))
        elif sub == "binding":
            node = e["requestObject"]["target"]["name"]
            if nominated.get(name) != node:  # a nominated pod's cycle takes its nominated node alone
                out.append(Decision(name, node, "score", state.best_by_score(specs[name])))
            state.bind(name, node, specs[name])
        elif sub == "status" and e["verb"] == "patch":
            node = ((e.get("responseObject") or {}).get("status") or {}).get("nominatedNodeName")
            if node and nominated.get(name) != node:
                nominated[name] = node
                out.append(Decision(name, node, "preemption", state.best_for_preemption(specs[name])))
        elif (e["verb"] == "delete" and not sub) or sub == "eviction":
            state.delete(name)
    last: dict[str, Decision] = {}
    for d in out:
        last[d.pod] = d
    return out, last
