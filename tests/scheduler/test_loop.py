"""The scheduler loop: the same cycles and flushes on the simulator's clock and on real time."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.loader import Scenario, load_scenario
from kubesched.des.clock import EventLoop
from kubesched.scheduler.loop import FlushPeriods, FlushPolicy, SchedulerLoop
from kubesched.scheduler.scheduler import Scheduler
from kubesched.serve.timers import RealTimers
from kubesched.sim import Simulation
from kubesched.testkit.builders import make_node, make_pod
from kubesched.testkit.scenarios import scenario_document, write_scenario

Flushes = list[tuple[float, str]]


class ReferenceDriver:
    """The simulator's flush timing before the loop existed, kept verbatim as the oracle: cycles and
    due timers until quiet, then background flush timers on the 1 s / 30 s grids, armed only when
    the queue has something for them."""

    def __init__(self, loop: EventLoop, scheduler: Scheduler) -> None:
        self.loop = loop
        self.scheduler = scheduler
        self._backoff_at: float | None = None
        self._unschedulable_at: float | None = None

    def run_instant(self, after_cycle: object = None) -> int:
        cycles = 0
        while True:
            ran = self.loop.run_due()
            n = self.scheduler.schedule_pending()
            cycles += n
            if not ran and not n:
                break
        queue = self.scheduler.queue
        now = self.loop.now()
        expiry = queue.next_backoff_expiry()
        if expiry is not None:
            tick = max(math.ceil(max(expiry, now) / 1.0) * 1.0, now)
            if self._backoff_at is None or tick < self._backoff_at:
                self._backoff_at = tick
                self.loop.call_at(tick, self._flush_backoff, background=True)
        oldest = queue.oldest_unschedulable_timestamp()
        if oldest is not None:
            due = oldest + queue.max_in_unschedulable
            tick = max((math.floor(due / 30.0) + 1) * 30.0, now)
            if self._unschedulable_at is None or tick < self._unschedulable_at:
                self._unschedulable_at = tick
                self.loop.call_at(tick, self._flush_unschedulable, background=True)
        return cycles

    def _flush_backoff(self) -> None:
        if self._backoff_at is not None and self._backoff_at <= self.loop.now():
            self._backoff_at = None
        self.scheduler.queue.flush_backoff_completed()

    def _flush_unschedulable(self) -> None:
        if self._unschedulable_at is not None and self._unschedulable_at <= self.loop.now():
            self._unschedulable_at = None
        self.scheduler.queue.flush_unschedulable_leftover()


def spy_flushes(scheduler: Scheduler, now: Any) -> Flushes:
    """Record (time, flush) for every flush of ``scheduler``'s queue."""
    calls: Flushes = []
    queue = scheduler.queue
    for name in ("flush_backoff_completed", "flush_unschedulable_leftover"):
        original = getattr(queue, name)

        def flush(original: Any = original, name: str = name) -> None:
            calls.append((now(), name))
            original()

        setattr(queue, name, flush)
    return calls


def backoff_heavy(tmp_path: Path) -> Path:
    """Pods too big for the node (one failing off the 1 s grid) are moved back through backoffQ by
    every small pod that comes and goes at odd times; another pod, rejected by node affinity, waits
    for the leftover flush."""
    steps: list[dict[str, Any]] = [{"at": "0.3s", "create": make_pod("big-late", "2")}]
    for i in range(280):
        at = round(0.3 + i * 0.35, 2)
        steps.append({"at": f"{at:g}s", "create": make_pod(f"small-{i}", "100m", grace=0)})
        steps.append({"at": f"{at + 0.2:g}s", "delete": {"kind": "Pod", "name": f"small-{i}",
                                                        "gracePeriodSeconds": 0}})
    stuck = make_pod("stuck", "100m")
    stuck["spec"]["nodeSelector"] = {"zone": "nowhere"}
    return write_scenario(tmp_path, [make_node("n1", cpu="1"), make_pod("big", "2"), stuck,
                                     scenario_document(steps=steps, until="700s")])


def run_with(path: Path, driver: str) -> tuple[dict[str, Any], Flushes]:
    sim = Simulation(load_scenario(path))
    if driver == "reference":
        sim.scheduler_loop = ReferenceDriver(sim.loop, sim.scheduler)  # type: ignore[assignment]
    flushes = spy_flushes(sim.scheduler, sim.loop.now)
    return sim.run().result, flushes


def test_flush_timing_in_the_simulator_matches_the_reference_driver(tmp_path: Path) -> None:
    path = backoff_heavy(tmp_path)
    result, flushes = run_with(path, "loop")
    reference, reference_flushes = run_with(path, "reference")
    assert flushes == reference_flushes
    assert json.dumps(result) == json.dumps(reference)
    # the scenario does exercise both flushes, on their grids
    backoff = [t for t, name in flushes if name == "flush_backoff_completed"]
    leftover = [t for t, name in flushes if name == "flush_unschedulable_leftover"]
    assert len(backoff) > 10 and all(t == int(t) for t in backoff)
    attempts_of_big = [e["time"] for e in result["events"]
                       if e["reason"] == "FailedScheduling" and e["pod"] == "default/big"]
    assert len(attempts_of_big) > 10
    late = [e["time"] for e in result["events"]
            if e["reason"] == "FailedScheduling" and e["pod"] == "default/big-late"]
    assert late[:2] == [0.3, 2.0]  # backoff until 1.3 s, flushed at the next tick
    # "stuck" fails at 0 and is only moved by the leftover flush: the first 30 s tick after 300 s
    stuck = [e["time"] for e in result["events"]
             if e["reason"] == "FailedScheduling" and e["pod"] == "default/stuck"]
    assert stuck[:3] == [0.0, 330.0, 660.0]
    assert {330.0, 660.0} <= set(leftover) and all(t % 30 == 0 for t in leftover)


class FakeMonotonic:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_periodic_flushes_on_real_time_run_every_period_from_start() -> None:
    sim = Simulation(Scenario(name="empty"))
    clock = FakeMonotonic()
    timers = RealTimers(clock)
    loop = SchedulerLoop(sim.scheduler, timers, policy=FlushPolicy.PERIODIC)
    flushes = spy_flushes(sim.scheduler, clock)
    loop.start()
    assert not timers.due() and timers.seconds_until_next() == 1.0
    for _ in range(61):
        clock.t += 0.5
        timers.run_due()
    backoff = [t - 1000.0 for t, name in flushes if name == "flush_backoff_completed"]
    leftover = [t - 1000.0 for t, name in flushes if name == "flush_unschedulable_leftover"]
    assert backoff == [float(s) for s in range(1, 31)]  # every second, whether or not there is work
    assert leftover == [30.0]
    # a late thread: the next flush is one period after the one that ran late
    clock.t += 2.3
    timers.run_due()
    assert timers.seconds_until_next() == pytest.approx(1.0)


def test_custom_periods_and_cycle_errors_go_to_the_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    sim = Simulation(Scenario(name="empty", objects=[make_node("n1"), make_pod("a"), make_pod("b")]))
    errors: list[Exception] = []
    loop = SchedulerLoop(sim.scheduler, RealTimers(FakeMonotonic()), policy=FlushPolicy.PERIODIC,
                         periods=FlushPeriods(backoff=0.25, unschedulable=2.0), on_cycle_error=errors.append)

    def broken(scheduler: Scheduler) -> bool:
        scheduler.queue.pop()
        raise RuntimeError("boom")

    monkeypatch.setattr("kubesched.scheduler.loop.schedule_one", broken)
    after: list[int] = []
    assert loop.run_cycles(after_cycle=lambda: after.append(1)) == 0
    assert [str(e) for e in errors] == ["boom", "boom"] and len(after) == 2
    loop.start()
    assert loop.timers.seconds_until_next() == 0.25  # type: ignore[attr-defined]
