"""The timeline of a simulation: the ``events`` of a SimulationResult (docs/scenarios.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class EventLog:
    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.events: list[dict[str, Any]] = []
        self.rejected: list[dict[str, Any]] = []

    def record(self, reason: str, pod: str, **fields: Any) -> None:
        event: dict[str, Any] = {"time": round(self._clock(), 6), "reason": reason, "pod": pod}
        event.update(fields)
        self.events.append(event)

    def reject(self, kind: str, name: str, code: int, message: str) -> None:
        now = round(self._clock(), 6)
        self.rejected.append({"time": now, "kind": kind, "name": name, "code": code, "message": message})
        label = name if kind == "Pod" else f"{kind}/{name}"
        self.events.append({"time": now, "reason": "Rejected", "pod": label, "message": message})
