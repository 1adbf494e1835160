"""Run scenario documents and query what happened: events, pod outcomes, preemption decisions and
(for deep runs) every version of every pod object.

A run goes through :func:`kubesched.sim.simulate`; :class:`ScenarioRun` wraps the
:class:`~kubesched.sim.SimulationOutcome` it returns. Pods named without a namespace are in ``default``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesched.sim import Simulation, SimulationOutcome, simulate
from kubesched.testkit.scenarios import write_scenario

Obj = dict[str, Any]


def pod_key(name: str) -> str:
    """``namespace/name`` for a pod name, ``default`` when none is given."""
    return name if "/" in name else f"default/{name}"


# -- queries on a SimulationResult ------------------------------------------------------------------------
def events(result: Obj, reason: str | None = None, pod: str | None = None) -> list[Obj]:
    """The result's events, of one reason and/or about one pod."""
    key = pod_key(pod) if pod else None
    return [e for e in result["events"]
            if (reason is None or e["reason"] == reason) and (key is None or e["pod"] == key)]


def phase(result: Obj, pod: str) -> str:
    return str(result["pods"][pod_key(pod)]["phase"])


def node_of(result: Obj, pod: str) -> str | None:
    node = result["pods"][pod_key(pod)]["node"]
    return None if node is None else str(node)


# -- deep runs -------------------------------------------------------------------------------------------
class PodRecorder:
    """Store watcher: every version of every pod, as ``(time, object)``."""

    def __init__(self, sim: Simulation) -> None:
        self._now = sim.loop.now
        self.versions: dict[str, list[tuple[float, Obj]]] = {}
        for obj in sim.cluster.api.list("Pod"):
            self._add(obj)

    def _add(self, obj: Obj) -> None:
        meta = obj["metadata"]
        key = f"{meta.get('namespace') or 'default'}/{meta['name']}"
        self.versions.setdefault(key, []).append((self._now(), obj))

    def on_add(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            self._add(obj)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        if kind == "Pod":
            self._add(new)

    def on_delete(self, kind: str, obj: Obj) -> None:
        pass


@dataclass(frozen=True)
class ScenarioRun:
    """A finished simulation (its outcome) with the lookups tests make; ``recorder`` holds the pod
    versions of a deep run, ``path`` the scenario file that was run."""

    outcome: SimulationOutcome
    recorder: PodRecorder | None = None
    path: Path | None = None

    @property
    def result(self) -> Obj:
        """The SimulationResult document."""
        return self.outcome.result

    @property
    def sim(self) -> Simulation:
        """The finished simulation (cluster, scheduler, clock)."""
        return self.outcome.simulation

    # events ------------------------------------------------------------------------------------------
    @property
    def events(self) -> list[Obj]:
        found: list[Obj] = self.result["events"]
        return found

    def ev(self, reason: str | None = None, name: str | None = None) -> list[Obj]:
        return events(self.result, reason, name)

    def times(self, reason: str, name: str | None = None) -> list[float]:
        return [e["time"] for e in self.ev(reason, name)]

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

    def evicted(self) -> list[tuple[float, str]]:
        """``(time, short name)`` for every pod the kubelet evicted."""
        return [(e["time"], e["pod"].split("/", 1)[1]) for e in self.ev("Evicted")]

    def scheduled(self, pod: str) -> list[tuple[float, str]]:
        return [(e["time"], e["node"]) for e in self.ev("Scheduled", pod)]

    def nominations(self, pod: str) -> list[tuple[float, str | None]]:
        return [(e["time"], e.get("node")) for e in self.ev("Nominated", pod)]

    def timeline(self, pods: Iterable[str] | None = None,
                 reasons: Iterable[str] | None = None) -> list[tuple[float, str, str, Any]]:
        """Compact ``(time, reason, pod, node-or-message)`` tuples, for readable assertions."""
        keys = {pod_key(p) for p in pods} if pods is not None else None
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

    # pods ----------------------------------------------------------------------------------------------
    def pod(self, name: str) -> Obj:
        """The pod's entry with the contract's fields (node, phase, priority, nominatedNodeName)."""
        entry = self.result["pods"][pod_key(name)]
        return {k: entry[k] for k in ("node", "phase", "priority", "nominatedNodeName")}

    def node_of(self, name: str) -> str | None:
        node: str | None = self.pod(name)["node"]
        return node

    def phase(self, name: str) -> str:
        return str(self.pod(name)["phase"])

    def live(self, pod: str) -> Obj | None:
        """The pod object in the store at the end of the run."""
        namespace, name = pod_key(pod).split("/", 1)
        return self.sim.cluster.api.get("Pod", namespace, name)

    # cluster components --------------------------------------------------------------------------------
    @property
    def autoscaler(self) -> Obj:
        return dict(self.result["cluster"]["autoscaler"])

    @property
    def eviction(self) -> Obj:
        return dict(self.result["cluster"]["eviction"])

    # explanations --------------------------------------------------------------------------------------
    def decisions(self, pod: str | None = None) -> list[Obj]:
        return [d for d in self.result.get("preemptionDecisions", []) if pod is None or d["pod"] == pod_key(pod)]

    def attempts(self, pod: str | None = None) -> list[Obj]:
        return [a for a in self.result.get("attempts", []) if pod is None or a["pod"] == pod_key(pod)]

    # API objects (deep runs) ---------------------------------------------------------------------------
    def versions(self, pod: str) -> list[tuple[float, Obj]]:
        assert self.recorder is not None, "run with deep=True"
        return self.recorder.versions.get(pod_key(pod), [])

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


def run_path(path: Path | str, *, seed: int | None = None, until: float | None = None, explain: bool = False,
             deep: bool = False, hook: Callable[[Simulation], None] | None = None) -> ScenarioRun:
    """Simulate a scenario file. ``deep`` records every pod version; ``hook(sim)`` is called before
    the run starts (to register more watchers, say), after a deep run's recorder."""
    recorders: list[PodRecorder] = []

    def start(sim: Simulation) -> None:
        if deep:
            recorders.append(PodRecorder(sim))
            sim.cluster.api.watch(recorders[0])
        if hook is not None:
            hook(sim)

    outcome = simulate(str(path), seed=seed, until=until, explain=explain, on_start=start)
    return ScenarioRun(outcome, recorders[0] if recorders else None, Path(path))


def explained_json(path: Path | str) -> str:
    """The whole result document of simulating ``path`` with explanations, as JSON text: what a
    differential test holds a fast path's run against the reference run with."""
    return json.dumps(simulate(str(path), explain=True).result)


def explained_both_ways(path: Path | str, monkeypatch: Any, owner: object, switch: str) -> tuple[str, str]:
    """:func:`explained_json` of ``path`` as it is, and with ``owner``'s fast path ``switch`` (a
    class attribute) turned off: what a differential test compares."""
    fast = explained_json(path)
    with monkeypatch.context() as patched:
        patched.setattr(owner, switch, False)
        reference = explained_json(path)
    return fast, reference


def run_docs(directory: Path, docs: Iterable[Obj | list[Obj]], **options: Any) -> ScenarioRun:
    """Write ``docs`` (dicts or lists of dicts) as a scenario in ``directory`` and simulate it (see
    :func:`run_path` for the options)."""
    return run_path(write_scenario(directory, docs), **options)
