"""SchedulerAsyncPreemption (opt-in): a preemptor's victims are preempted as API work apart from the
scheduling cycle. The pod is nominated at once and kept out of activeQ by DefaultPreemption's
PreEnqueue until that work is done; a simulation, whose API calls take no time, decides the same.
(`tests/kube` checks a real scheduling thread going on while the victims' calls are under way.)"""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.loader import load_scenario
from kubesched.scheduler.binding import BindingDone, BindingWork
from kubesched.scheduler.features import ASYNC_PREEMPTION, FeatureGateError, parse_feature_gates
from kubesched.scheduler.framework.waiting import BindWait
from kubesched.scheduler.plugins.defaultpreemption import WAITING_FOR_PREEMPTION
from kubesched.sim import Simulation
from kubesched.testkit.builders import make_node, make_pod, make_priority_class
from kubesched.testkit.scenarios import write_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class HeldWork:
    """A binding mode that runs nothing until told: the API work of a preemption (and any binding)
    stays under way, as on a worker thread that has not finished."""

    def __init__(self) -> None:
        self.held: list[tuple[BindingWork, BindingDone]] = []
        self.in_flight = 0

    def submit(self, work: BindingWork, then: BindingDone) -> None:
        self.held.append((work, then))

    def release(self) -> None:
        held, self.held = self.held, []
        for work, then in held:
            outcome = work()
            assert not isinstance(outcome, BindWait)
            then(outcome)

    def finish(self) -> int:
        return 0

    def shutdown(self) -> None:
        pass


def _victim_and_preemptor(tmp_path: Path) -> Simulation:
    path = write_scenario(tmp_path, [
        make_priority_class("low", 100), make_priority_class("high", 1000),
        make_node("n1", cpu="4"),
        make_pod("victim", cpu="3", priority_class="low", node="n1", grace=0),
        make_pod("preemptor", cpu="2", priority_class="high"),
    ])
    return Simulation(load_scenario(path), feature_gates={ASYNC_PREEMPTION: True})


def test_a_pod_is_kept_out_of_active_q_while_its_preemption_is_under_way(tmp_path: Path) -> None:
    sim = _victim_and_preemptor(tmp_path)
    held = HeldWork()
    sim.scheduler.binding = held
    sim.scheduler_loop.run_instant()
    preemptor = sim.cluster.api.get("Pod", "default", "preemptor")
    assert preemptor is not None and preemptor["status"]["nominatedNodeName"] == "n1"
    victim = sim.cluster.api.get("Pod", "default", "victim")
    assert victim is not None and not victim["metadata"].get("deletionTimestamp")  # not yet preempted
    queued = sim.scheduler.queue.queued(preemptor["metadata"]["uid"])
    assert queued is not None
    fwk = sim.scheduler.frameworks["default-scheduler"]
    status = fwk.run_pre_enqueue(queued.pod)
    assert status is not None and status.message() == WAITING_FOR_PREEMPTION
    assert status.plugin == "DefaultPreemption"
    sim.scheduler.queue.activate([queued.pod])  # an activation now leaves it gated
    assert not sim.scheduler.queue.has_active()
    assert sim.scheduler.queue.queued(queued.pod.uid).gated  # type: ignore[union-attr]

    held.release()  # the victim's calls are done
    assert fwk.run_pre_enqueue(queued.pod) is None
    sim.scheduler.binding = HeldWorkRunningAtOnce()
    assert sim.run().result["pods"]["default/preemptor"]["node"] == "n1"


class HeldWorkRunningAtOnce(HeldWork):
    def submit(self, work: BindingWork, then: BindingDone) -> None:
        super().submit(work, then)
        self.release()


def test_a_failed_preemption_activates_the_pod_and_spares_the_last_victim(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first of two victims cannot be deleted: the last is left alone, and the preemptor is
    activated (it would otherwise wait in the unschedulable pool for an event that never comes)."""
    path = write_scenario(tmp_path, [
        make_priority_class("low", 100), make_priority_class("high", 1000),
        make_node("n1", cpu="4"),
        make_pod("v1", cpu="2", priority_class="low", node="n1", grace=0),
        make_pod("v2", cpu="2", priority_class="low", node="n1", grace=0),
        make_pod("preemptor", cpu="4", priority_class="high"),
    ])
    sim = Simulation(load_scenario(path), feature_gates={ASYNC_PREEMPTION: True})
    from kubesched.k8s.objects import ApiError
    from kubesched.scheduler.framework import victims

    real = victims.preempt_pod
    calls: list[str] = []

    def failing_first(cluster: Any, victim: Any, *args: Any) -> str | None:
        calls.append(victim.name)
        if len(calls) == 1:
            return ApiError(500, "InternalError", "etcd is away").message
        return real(cluster, victim, *args)

    monkeypatch.setattr(victims, "preempt_pod", failing_first)
    activated: list[str] = []
    queue = sim.scheduler.queue
    original = queue.activate

    def recording(pods: Any) -> None:
        activated.extend(p.name for p in pods)
        original(pods)

    monkeypatch.setattr(queue, "activate", recording)
    sim.scheduler_loop.run_instant()
    assert len(calls) == 1  # the last victim was spared
    assert activated == ["preemptor"]
    assert all(not (sim.cluster.api.get("Pod", "default", v) or {})["metadata"].get("deletionTimestamp")
               for v in ("v1", "v2"))


#: the scenarios among the examples (not the KubeSchedulerConfigurations next to them)
SCENARIOS = sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.glob("preemption*/*.yaml")
                   if "kind: KubeSchedulerConfiguration" not in p.read_text())


@pytest.mark.parametrize("example", SCENARIOS)
def test_a_simulation_decides_the_same_with_async_preemption(example: str) -> None:
    """Same pods on the same nodes, the same nominations, preemptions and events: only the order of
    one instant's API calls may differ (lower nominations are cleared before the victims go)."""
    def run(gates: dict[str, bool]) -> dict[str, Any]:
        return Simulation(load_scenario(EXAMPLES / example), feature_gates=gates).run().result

    sync, asynchronous = run({}), run({ASYNC_PREEMPTION: True})
    for section in sync:
        if section != "events":
            assert asynchronous[section] == sync[section], section

    def bag(events: list[dict[str, Any]]) -> collections.Counter[str]:
        return collections.Counter(json.dumps(e, sort_keys=True) for e in events)

    assert bag(asynchronous["events"]) == bag(sync["events"])


def test_feature_gates_are_parsed_as_kube_scheduler_parses_them() -> None:
    assert parse_feature_gates("SchedulerAsyncPreemption=true") == {ASYNC_PREEMPTION: True}
    assert parse_feature_gates(" SchedulerAsyncPreemption = False ,") == {ASYNC_PREEMPTION: False}
    with pytest.raises(FeatureGateError, match="^unrecognized feature gate: Nope$"):
        parse_feature_gates("Nope=true")
    with pytest.raises(FeatureGateError, match="^missing bool value for SchedulerAsyncPreemption$"):
        parse_feature_gates("SchedulerAsyncPreemption")
    with pytest.raises(FeatureGateError, match='parsing "yes": invalid syntax$'):
        parse_feature_gates("SchedulerAsyncPreemption=yes")
