"""Helpers for scenario conformance tests: build scenario YAML, run it, query the result.

Objects are plain dicts written with ``yaml.safe_dump_all`` into pytest's ``tmp_path``; runs go
through :func:`kubesched.sim.simulate` (or, when a test needs the API objects' conditions
or the scheduler's metrics/queue, through :class:`kubesched.sim.Simulation` with a watcher
that records every pod object version).

Simulated time 0 is 2026-01-01T00:00:00Z; :func:`ago` gives RFC3339 stamps before it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.sim import Simulation
from kubesched.sim import simulate as simulate_scenario

Obj = dict[str, Any]

PAUSE = "registry.k8s.io/pause:3.9"
T0_MINUTE = 60


def ago(minutes: float) -> str:
    """RFC3339 timestamp ``minutes`` before simulated time 0 (2026-01-01T00:00:00Z)."""
    from datetime import UTC, datetime, timedelta

    t = datetime(2026, 1, 1, tzinfo=UTC) - timedelta(minutes=minutes)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# -- object builders ---------------------------------------------------------------------------
def pclass(name: str, value: int, policy: str | None = None, global_default: bool = False) -> Obj:
    obj: Obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value}
    if policy:
        obj["preemptionPolicy"] = policy
    if global_default:
        obj["globalDefault"] = True
    return obj


def std_classes() -> list[Obj]:
    """§11 defaults: low=100, mid=500, high=1000."""
    return [pclass("low", 100), pclass("mid", 500), pclass("high", 1000)]


def node(name: str, cpu: str = "4", memory: str = "16Gi", pods: str = "110", *,
         labels: dict[str, str] | None = None, taints: list[Obj] | None = None,
         unschedulable: bool = False) -> Obj:
    obj: Obj = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}},
    }
    spec: Obj = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    if spec:
        obj["spec"] = spec
    return obj


def taint(key: str = "k", value: str = "v", effect: str = "NoSchedule") -> Obj:
    return {"key": key, "value": value, "effect": effect}


def container(cpu: str | None = None, memory: str | None = None, name: str = "app") -> Obj:
    c: Obj = {"name": name, "image": PAUSE}
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    if requests:
        c["resources"] = {"requests": requests}
    return c


def pod(name: str, cpu: str | None = None, memory: str | None = None, *, cls: str | None = None,
        on: str | None = None, start: str | None = None, grace: int | None = None,
        labels: dict[str, str] | None = None, ns: str | None = None,
        annotations: dict[str, str] | None = None, status: Obj | None = None,
        containers: list[Obj] | None = None, **spec_extra: Any) -> Obj:
    """A pod. ``on`` binds it (Running from t=0); ``start`` pins ``status.startTime``."""
    meta: Obj = {"name": name}
    if ns:
        meta["namespace"] = ns
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    spec: Obj = {"containers": containers if containers is not None else [container(cpu, memory)]}
    if cls:
        spec["priorityClassName"] = cls
    if on:
        spec["nodeName"] = on
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    spec.update(spec_extra)
    obj: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    st = dict(status or {})
    if start:
        st["startTime"] = start
    if st:
        obj["status"] = st
    return obj


def pdb(name: str, selector: Obj | None, allowed: int | None, *, ns: str | None = None,
        min_available: int = 1) -> Obj:
    obj: Obj = {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name, **({"namespace": ns} if ns else {})},
        "spec": {"minAvailable": min_available, "selector": selector},
    }
    if allowed is not None:
        obj["status"] = {"disruptionsAllowed": allowed}
    return obj


def quota(name: str, hard: dict[str, str], scope_selector: Obj | None = None, ns: str | None = None) -> Obj:
    spec: Obj = {"hard": hard}
    if scope_selector is not None:
        spec["scopeSelector"] = scope_selector
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": name, **({"namespace": ns} if ns else {})}, "spec": spec}


# -- steps -------------------------------------------------------------------------------------
def _dur(seconds: float) -> str:
    if float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{int(round(seconds * 1000))}ms"


def create(at: float, obj: Obj) -> Obj:
    return {"at": _dur(at), "create": obj}


def delete(at: float, name: str, grace: int | None = None, kind: str = "Pod", ns: str | None = "default") -> Obj:
    d: Obj = {"kind": kind, "name": name}
    if ns and kind == "Pod":
        d["namespace"] = ns
    if grace is not None:
        d["gracePeriodSeconds"] = grace
    return {"at": _dur(at), "delete": d}


def patch(at: float, kind: str, name: str, merge: Obj, ns: str | None = None) -> Obj:
    p: Obj = {"kind": kind, "name": name, "merge": merge}
    if ns:
        p["namespace"] = ns
    return {"at": _dur(at), "patch": p}


def scenario(steps: Iterable[Obj] = (), *, seed: int = 1, until: float | None = None,
             config: Obj | None = None, name: str = "test") -> Obj:
    spec: Obj = {"seed": seed, "steps": list(steps)}
    if until is not None:
        spec["until"] = _dur(until)
    if config is not None:
        spec["schedulerConfiguration"] = config
    return {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": name}, "spec": spec}


def write_yaml(path: Path, docs: Iterable[Obj]) -> Path:
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=False))
    return path


# -- results ------------------------------------------------------------------------------------
def key(name: str) -> str:
    return name if "/" in name else f"default/{name}"


class PodRecorder:
    """Store watcher: every version of every pod, as ``(time, object)``."""

    def __init__(self, sim: Simulation) -> None:
        self._now = sim.loop.now
        self.versions: dict[str, list[tuple[float, Obj]]] = {}
        for obj in sim.cluster.store.list("Pod"):
            self._add(obj)

    def _add(self, obj: Obj) -> None:
        meta = obj["metadata"]
        k = f"{meta.get('namespace') or 'default'}/{meta['name']}"
        self.versions.setdefault(k, []).append((self._now(), obj))

    def on_add(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            self._add(obj)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        if kind == "Pod":
            self._add(new)

    def on_delete(self, kind: str, obj: Obj) -> None:
        pass


@dataclass
class Run:
    result: dict[str, Any]
    sim: Simulation | None = None
    recorder: PodRecorder | None = None
    path: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    # events ------------------------------------------------------------------------------
    @property
    def events(self) -> list[Obj]:
        return self.result["events"]

    def ev(self, reason: str | None = None, pod: str | None = None) -> list[Obj]:
        k = key(pod) if pod else None
        return [e for e in self.events
                if (reason is None or e["reason"] == reason) and (k is None or e["pod"] == k)]

    def times(self, reason: str, pod: str) -> list[float]:
        return [e["time"] for e in self.ev(reason, pod)]

    def messages(self, pod: str) -> list[str]:
        return [e["message"] for e in self.ev("FailedScheduling", pod)]

    def failed(self, pod: str) -> list[tuple[float, str]]:
        return [(e["time"], e["message"]) for e in self.ev("FailedScheduling", pod)]

    def preempted(self) -> list[tuple[float, str, str | None]]:
        """``(time, victim short name, preemptor short name)`` for every Preempted event."""
        return [(e["time"], e["pod"].split("/", 1)[1], (e.get("preemptor") or "/").split("/", 1)[1])
                for e in self.ev("Preempted")]

    def victims(self) -> set[str]:
        return {v for _, v, _ in self.preempted()}

    def scheduled(self, pod: str) -> list[tuple[float, str]]:
        return [(e["time"], e["node"]) for e in self.ev("Scheduled", pod)]

    def nominations(self, pod: str) -> list[tuple[float, str | None]]:
        return [(e["time"], e.get("node")) for e in self.ev("Nominated", pod)]

    def pod(self, name: str) -> Obj:
        """The pod's entry with the contract's fields (node, phase, priority, nominatedNodeName)."""
        entry = self.result["pods"][key(name)]
        return {k: entry[k] for k in ("node", "phase", "priority", "nominatedNodeName")}

    def node_of(self, name: str) -> str | None:
        return self.pod(name)["node"]

    def phase(self, name: str) -> str:
        return self.pod(name)["phase"]

    def timeline(self, pods: Iterable[str] | None = None, reasons: Iterable[str] | None = None) -> list[tuple]:
        """Compact ``(time, reason, pod, node-or-message)`` tuples, for readable assertions."""
        keys = {key(p) for p in pods} if pods is not None else None
        wanted = set(reasons) if reasons is not None else None
        out = []
        for e in self.events:
            if keys is not None and e["pod"] not in keys:
                continue
            if wanted is not None and e["reason"] not in wanted:
                continue
            detail = e.get("message") if e["reason"] == "FailedScheduling" else e.get("node")
            out.append((e["time"], e["reason"], e["pod"].split("/", 1)[-1], detail))
        return out

    # explanations ------------------------------------------------------------------------
    def decisions(self, pod: str | None = None) -> list[Obj]:
        ds = self.result.get("preemptionDecisions", [])
        return [d for d in ds if pod is None or d["pod"] == key(pod)]

    def attempts(self, pod: str | None = None) -> list[Obj]:
        at = self.result.get("attempts", [])
        return [a for a in at if pod is None or a["pod"] == key(pod)]

    # API objects (deep runs only) --------------------------------------------------------
    def versions(self, pod: str) -> list[tuple[float, Obj]]:
        assert self.recorder is not None, "run with deep=True"
        return self.recorder.versions.get(key(pod), [])

    def conditions(self, pod: str, ctype: str) -> list[tuple[float, Obj]]:
        """Every distinct value of condition ``ctype`` the pod had, with the time it appeared."""
        out: list[tuple[float, Obj]] = []
        for t, obj in self.versions(pod):
            cond = next((c for c in (obj.get("status") or {}).get("conditions") or ()
                         if c.get("type") == ctype), None)
            if cond is None:
                continue
            core = {k: cond.get(k) for k in ("status", "reason", "message")}
            if not out or out[-1][1] != core:
                out.append((t, core))
        return out

    def live(self, pod: str) -> Obj | None:
        assert self.sim is not None
        ns, name = key(pod).split("/", 1)
        return self.sim.cluster.store.get("Pod", ns, name)


_counter = itertools.count()


@pytest.fixture
def simulate(tmp_path: Path) -> Callable[..., Run]:
    """``simulate(*docs, seed=None, until=None, explain=True, deep=False, hook=None) -> Run``.

    ``docs`` are dicts or lists of dicts (flattened); a Scenario document is appended if none is
    given. ``deep=True`` runs through :class:`Simulation` and records every pod version;
    ``hook(sim)`` is then called before the run (e.g. to register more watchers).
    """

    def run(*docs: Obj | list[Obj], seed: int | None = None, until: float | None = None,
            explain: bool = True, deep: bool = False,
            hook: Callable[[Simulation], None] | None = None) -> Run:
        flat: list[Obj] = []
        for d in docs:
            flat.extend(d if isinstance(d, list) else [d])
        if not any(d.get("kind") == "Scenario" for d in flat):
            flat.append(scenario())
        path = write_yaml(tmp_path / f"scenario-{next(_counter)}.yaml", flat)
        if not deep:
            return Run(simulate_scenario(str(path), seed=seed, until=until, explain=explain).result, path=path)
        from kubesched.api.loader import load_scenario

        sim = Simulation(load_scenario(str(path)), seed=seed, until=until, explain=explain)
        recorder = PodRecorder(sim)
        sim.cluster.store.watch(recorder)
        if hook is not None:
            hook(sim)
        return Run(sim.run().result, sim=sim, recorder=recorder, path=path)

    return run
