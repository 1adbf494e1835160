"""kubesched run's binding cycles: a cycle that waits (VolumeBinding waiting for the PersistentVolume
controller) must not hold a binding worker, or a few workers would cap how many pods with volumes
bind at once (upstream runs each binding cycle in a goroutine of its own)."""

from __future__ import annotations

import threading

from kubesched.scheduler.binding import BackgroundBinder
from kubesched.scheduler.framework.interface import PendingBind, Status
from kubesched.scheduler.framework.waiting import BindWait

WAITING = 40
WORKERS = 2


def _finish_all(binder: BackgroundBinder, outcomes: dict[int, Status | None], expected: int) -> None:
    deadline = threading.Event()
    for _ in range(2000):
        binder.finish()
        if len(outcomes) == expected:
            return
        deadline.wait(0.01)
    raise AssertionError(f"only {len(outcomes)} of {expected} bindings finished")


def test_many_more_cycles_wait_at_once_than_there_are_workers() -> None:
    binder = BackgroundBinder(workers=WORKERS)
    polled: set[int] = set()
    lock = threading.Lock()
    all_polled = threading.Event()
    resumed: list[int] = []
    outcomes: dict[int, Status | None] = {}

    def work(i: int) -> BindWait:
        def poll() -> tuple[bool, Status | None]:
            with lock:
                polled.add(i)
                if len(polled) == WAITING:
                    all_polled.set()
            # the controller answers only once every cycle is waiting: with one worker held per
            # waiting cycle, no more than WORKERS could ever be polled
            return all_polled.is_set(), None

        def resume(result: Status | None) -> Status | None:
            resumed.append(i)
            return result

        return BindWait(PendingBind(poll, 0.001, 60.0, "timed out"), resume)

    for i in range(WAITING):
        binder.submit(lambda i=i: work(i), lambda status, i=i: outcomes.__setitem__(i, status))
    _finish_all(binder, outcomes, WAITING)
    binder.shutdown()
    assert sorted(resumed) == list(range(WAITING))
    assert outcomes == {i: None for i in range(WAITING)}
    assert binder.in_flight == 0


def test_a_wait_that_never_answers_fails_with_its_timeout_message() -> None:
    binder = BackgroundBinder(workers=1)
    outcomes: dict[int, Status | None] = {}
    wait = BindWait(PendingBind(lambda: (False, None), 0.001, 0.01, "binding volumes: timed out waiting for the condition"),
                    lambda result: result)
    binder.submit(lambda: wait, lambda status: outcomes.__setitem__(0, status))
    _finish_all(binder, outcomes, 1)
    binder.shutdown()
    status = outcomes[0]
    assert status is not None and status.message() == "binding volumes: timed out waiting for the condition"


def test_a_wait_whose_poll_fails_reports_the_error_and_loses_no_binding() -> None:
    binder = BackgroundBinder(workers=1)
    outcomes: dict[int, Status | None] = {}

    def broken() -> tuple[bool, Status | None]:
        raise RuntimeError("cache gone")

    binder.submit(lambda: BindWait(PendingBind(broken, 0.001, 60.0, "timed out"), lambda result: result),
                  lambda status: outcomes.__setitem__(0, status))
    _finish_all(binder, outcomes, 1)
    binder.shutdown()
    status = outcomes[0]
    assert status is not None and "cache gone" in status.message()
