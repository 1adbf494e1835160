"""Which objects of a kind changed since some moment: what lets a reader that keeps its own view of
many objects (the VolumeBinding plugin's candidate volumes) catch up with the few that changed
instead of reading them all again."""

from __future__ import annotations

#: entries a kind's journal may hold beyond twice its live objects before it is compacted
COMPACT_SLACK = 1024


class ChangeJournal:
    """Kept by an object store next to its objects (:meth:`note` on every create, update and
    delete, under the store's own lock if it has one). Marks are numbers of this journal only.

    A kind's changes are journaled from the first time someone asks for them; for each object
    only its latest change is kept (the keys of deleted objects stay, so a reader learns that
    they went away)."""

    def __init__(self) -> None:
        self._seq = 0
        #: per journaled kind: key -> the number of its latest change, in that order
        self._kinds: dict[str, dict[str, int]] = {}
        #: per journaled kind: marks below this one can no longer be answered (entries dropped)
        self._floor: dict[str, int] = {}

    def note(self, kind: str, key: str, live: int) -> None:
        """The object ``key`` of ``kind`` was created, updated or deleted; ``live``: how many
        objects of the kind the store holds now. Deleted objects' keys would pile up: once the
        entries outnumber twice the live objects (and some slack), they are dropped and readers of
        an older mark read everything once."""
        changed = self._kinds.get(kind)
        if changed is None:
            return
        self._seq += 1
        changed.pop(key, None)
        changed[key] = self._seq
        if len(changed) > 2 * live + COMPACT_SLACK:
            changed.clear()
            self._floor[kind] = self._seq

    def since(self, kind: str, mark: int | None) -> tuple[int, list[str] | None]:
        """The mark to ask from next time, and the keys of the objects of ``kind`` created, updated
        or deleted after ``mark`` (a mark this journal gave); None instead of the keys when that
        cannot be told (no mark, or the kind was not journaled until now): read them all."""
        changed = self._kinds.get(kind)
        if changed is None:
            self._kinds[kind] = {}
            return self._seq, None
        if mark is None or mark > self._seq or mark < self._floor.get(kind, 0):
            return self._seq, None
        keys = []
        for key, seq in reversed(changed.items()):
            if seq <= mark:
                break
            keys.append(key)
        return self._seq, keys
