"""Time series derived from a SimulationResult's events (for plots)."""

from __future__ import annotations

from typing import Any

GONE = ("Deleted", "Completed", "Evicted", "Failed")


def pod_counts_over_time(events: list[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
    """Pending and running pod counts after each instant at which either changed."""
    state: dict[str, str] = {}
    points: dict[str, list[tuple[float, float]]] = {"pending": [], "running": []}

    def snapshot(t: float) -> None:
        pending = sum(1 for s in state.values() if s == "pending")
        running = sum(1 for s in state.values() if s == "running")
        for name, value in (("pending", pending), ("running", running)):
            series = points[name]
            if series and series[-1][0] == t:
                series[-1] = (t, value)
            elif not series or series[-1][1] != value:
                series.append((t, value))

    for event in events:
        pod, reason = event["pod"], event["reason"]
        before = dict(state)
        if reason == "Created":
            state[pod] = "pending"
        elif reason in ("Scheduled", "Started"):
            state[pod] = "running"
        elif reason in GONE:
            state.pop(pod, None)
        if state != before:
            snapshot(event["time"])
    return points
