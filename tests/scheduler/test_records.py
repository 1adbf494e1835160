"""The scheduler's recorder: a simulation keeps every decision, a long-running scheduler the latest."""

from __future__ import annotations

from kubesched.scheduler.records import AttemptRecord, Recorder


def _attempt(i: int) -> AttemptRecord:
    return AttemptRecord(time=float(i), pod=f"default/p{i}", outcome="scheduled", node="n1")


def test_attempts_are_kept_only_when_asked_for() -> None:
    plain, explaining = Recorder(), Recorder(keep_attempts=True)
    for i in range(3):
        plain.attempt(_attempt(i))
        explaining.attempt(_attempt(i))
    assert plain.attempts == []
    assert [a.pod for a in explaining.attempts] == ["default/p0", "default/p1", "default/p2"]


def test_a_limit_keeps_the_latest_records_and_bounds_the_rest() -> None:
    recorder = Recorder(keep_attempts=True, limit=10)
    for i in range(1000):
        recorder.attempt(_attempt(i))
        assert 1 <= len(recorder.attempts) <= 20
        assert recorder.attempts[-1].pod == f"default/p{i}"
        kept = [int(a.time) for a in recorder.attempts]
        assert kept == list(range(i + 1 - len(kept), i + 1))  # the latest, in order
        assert len(kept) >= min(i + 1, 10)


def test_without_a_limit_everything_is_kept() -> None:
    recorder = Recorder(keep_attempts=True)
    for i in range(500):
        recorder.attempt(_attempt(i))
    assert len(recorder.attempts) == 500
