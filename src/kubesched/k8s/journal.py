"""What changed since some moment: what lets a reader that keeps its own view of many things (the
scheduler cache's nodes, the nominator's nominations, the objects of a kind) catch up with the few
that changed instead of looking at them all again.

A :class:`Journal` is the one idiom: its owner notes an entry on every change; a reader keeps the
:attr:`~Journal.mark` the journal gave it and asks what was noted since (:meth:`Journal.since`).
Marks only grow. The journal is bounded: a full journal (its owner chooses the bound: past it, a
reader catches up faster by looking at everything) forgets what it holds before it takes the next
entry, and a reader whose mark it no longer reaches is told None — "look at everything" —
along with a fresh mark. Any number of readers may follow one journal, each at its own pace.

:class:`ChangeJournal` is the keyed form an object store keeps: per kind, a journal of the keys
written, each key told once (its latest change) to a reader.
"""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")

#: entries a kind's journal may hold beyond twice its live objects before it forgets them
COMPACT_SLACK = 1024


class Journal(Generic[T]):
    """Entries in the order they were noted. A mark counts the entries noted before it, the
    forgotten ones included: a reader at mark m has seen the first m entries ever noted."""

    __slots__ = ("_entries", "_floor", "bound")

    def __init__(self, bound: int) -> None:
        self._entries: list[T] = []
        #: the mark of the first entry held: older marks can no longer be answered
        self._floor = 0
        #: how many entries the journal holds at most (or one); its owner may change it at any time
        self.bound = bound

    @property
    def mark(self) -> int:
        """The mark of now: a reader given it has seen every entry noted so far."""
        return self._floor + len(self._entries)

    def note(self, entry: T) -> None:
        """Add ``entry``; a full journal (:attr:`bound` entries or more) forgets them first."""
        entries = self._entries
        if len(entries) >= self.bound:
            self._floor += len(entries)
            entries = self._entries = []
        entries.append(entry)

    def since(self, mark: int | None) -> tuple[int, list[T] | None]:
        """The mark to ask from next time, and the entries noted after ``mark`` (a mark this
        journal gave) in order; None instead of the entries when that cannot be told (no mark, or
        one this journal no longer reaches): look at everything."""
        now = self._floor + len(self._entries)
        if mark is None or not self._floor <= mark <= now:
            return now, None
        return now, self._entries[mark - self._floor:]


class ChangeJournal:
    """Kept by an object store next to its objects (:meth:`note` on every create, update and
    delete, under the store's own lock if it has one): per kind, a :class:`Journal` of the keys
    written. Marks are numbers of one kind's journal.

    A kind's changes are journaled from the first time someone asks for them. A reader is told each
    key once however often it was written (the keys of deleted objects too, so a reader learns
    that they went away)."""

    __slots__ = ("_kinds",)

    def __init__(self) -> None:
        self._kinds: dict[str, Journal[str]] = {}

    def note(self, kind: str, key: str, live: int) -> None:
        """The object ``key`` of ``kind`` was created, updated or deleted; ``live``: how many
        objects of the kind the store holds now. Past twice the live objects (and some slack) the
        kind's journal forgets what it holds: reading every object is then no dearer than
        reading what changed."""
        journal = self._kinds.get(kind)
        if journal is not None:
            journal.bound = 2 * live + COMPACT_SLACK
            journal.note(key)

    def since(self, kind: str, mark: int | None) -> tuple[int, list[str] | None]:
        """The mark to ask from next time, and the keys of the objects of ``kind`` created, updated
        or deleted after ``mark`` (a mark this journal gave), each once, the latest written first;
        None instead of the keys when that cannot be told (no mark, the journal forgot, or the kind
        was not journaled until now): read them all."""
        journal = self._kinds.get(kind)
        if journal is None:
            journal = self._kinds[kind] = Journal(COMPACT_SLACK)
            return journal.mark, None
        now, keys = journal.since(mark)
        if keys is None:
            return now, None
        return now, list(dict.fromkeys(reversed(keys)))
