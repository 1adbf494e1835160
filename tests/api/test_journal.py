"""The change journal (``k8s/journal.py``): marks, the bound, readers too far behind, and the keyed
form an object store keeps."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.k8s import journal
from kubesched.k8s.journal import ChangeJournal, Journal


def test_a_reader_is_told_what_was_noted_since_its_mark_in_order() -> None:
    log: Journal[str] = Journal(100)
    first, told = log.since(None)
    assert (first, told) == (0, None)  # no mark yet: look at everything
    for name in ("ip-10-0-1-12.ec2.internal", "ip-10-0-2-7.ec2.internal", "ip-10-0-1-12.ec2.internal"):
        log.note(name)
    mark, told = log.since(first)
    assert mark == log.mark == 3
    assert told == ["ip-10-0-1-12.ec2.internal", "ip-10-0-2-7.ec2.internal", "ip-10-0-1-12.ec2.internal"]
    assert log.since(mark) == (3, [])  # nothing since


def test_readers_follow_one_journal_each_at_its_own_pace() -> None:
    log: Journal[int] = Journal(100)
    slow = fast = log.mark
    for i in range(5):
        log.note(i)
        fast, told = log.since(fast)
        assert told == [i]
    assert log.since(slow) == (5, [0, 1, 2, 3, 4])


def test_a_full_journal_forgets_and_a_reader_it_no_longer_reaches_gets_none() -> None:
    log: Journal[str] = Journal(3)
    behind = log.mark
    for name in "abc":
        log.note(name)
    current = log.mark
    log.note("d")  # full: a, b, c are forgotten before d is taken
    assert log.mark == 4  # marks keep counting across what was forgotten
    assert log.since(behind) == (4, None)  # too far behind: look at everything
    assert log.since(current) == (4, ["d"])  # a reader just behind still catches up
    assert log._entries == ["d"]


def test_a_mark_the_journal_never_gave_gets_none() -> None:
    log: Journal[str] = Journal(10)
    log.note("a")
    assert log.since(7) == (1, None)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(bound=st.integers(0, 6), steps=st.lists(st.one_of(st.integers(0, 9), st.just("read")), max_size=60))
def test_what_a_reader_is_told_is_exactly_what_was_noted(bound: int, steps: list) -> None:
    """Told entries are the very entries noted since the mark; the journal never holds more than
    the bound (or one); a reader that reads after every note is never told None."""
    log: Journal[int] = Journal(bound)
    noted: list[int] = []
    marks = [log.mark]  # one reader starting at each read
    eager = log.mark
    for step in steps:
        if step == "read":
            marks.append(log.mark)
            continue
        log.note(step)
        noted.append(step)
        assert len(log._entries) <= max(bound, 1)
        eager, told = log.since(eager)
        assert told == [step]
        for mark in marks:
            now, told = log.since(mark)
            assert now == len(noted)
            assert told is None or told == noted[mark:]


def test_the_keyed_form_tells_each_key_once_latest_first_from_the_first_question() -> None:
    changes = ChangeJournal()
    changes.note("PersistentVolume", "pv-a", 1)  # not journaled yet: nobody asked
    mark, keys = changes.since("PersistentVolume", None)
    assert keys is None
    for key in ("pv-a", "pv-b", "pv-a", "pv-c", "pv-b"):
        changes.note("PersistentVolume", key, 3)
    mark, keys = changes.since("PersistentVolume", mark)
    assert keys == ["pv-b", "pv-c", "pv-a"]
    changes.note("PersistentVolume", "pv-c", 2)  # deleted: still told, so the reader drops it
    assert changes.since("PersistentVolume", mark)[1] == ["pv-c"]
    assert changes.since("PersistentVolumeClaim", mark)[1] is None  # each kind journaled on its own


def test_the_keyed_form_forgets_past_twice_the_live_objects_plus_the_slack(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal, "COMPACT_SLACK", 2)
    changes = ChangeJournal()
    mark, _ = changes.since("Node", None)
    for i in range(4):  # one live object: the journal holds 2 * 1 + 2 entries
        changes.note("Node", f"node-{i % 2}", 1)
    recent, _ = changes.since("Node", None)
    assert changes.since("Node", mark) == (4, ["node-1", "node-0"])
    changes.note("Node", "node-0", 1)
    assert changes.since("Node", mark) == (5, None)
    assert changes.since("Node", recent) == (5, ["node-0"])
