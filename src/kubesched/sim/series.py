"""Time series derived from a SimulationResult's events (for plots)."""

from __future__ import annotations

from collections import Counter
from typing import Any

GONE = ("Deleted", "Completed", "Evicted", "Failed")


def pod_counts_over_time(events: list[dict[str, Any]], *,
                         terminating: bool = False) -> dict[str, list[tuple[float, float]]]:
    """Pending and running pod counts after each instant at which either changed. ``terminating``:
    count the pods between their Terminating event and their end apart (``terminating``) instead of
    as running."""
    state: dict[str, str] = {}
    counts: Counter[str] = Counter()
    names = ("pending", "running", "terminating") if terminating else ("pending", "running")
    points: dict[str, list[tuple[float, float]]] = {name: [] for name in names}

    def record(t: float) -> None:
        for name in names:
            value = counts[name]
            series = points[name]
            if series and series[-1][0] == t:
                series[-1] = (t, value)
            elif not series or series[-1][1] != value:
                series.append((t, value))

    for event in events:
        pod, reason = event["pod"], event["reason"]
        before = state.get(pod)
        if reason == "Created":
            after: str | None = "pending"
        elif reason in ("Scheduled", "Started"):
            after = "terminating" if before == "terminating" else "running"
        elif reason == "Terminating" and terminating and before is not None:
            after = "terminating"
        elif reason in GONE or event.get("phase") == "Failed":  # kubelet rejections carry their own reason
            after = None
        else:
            continue
        if after == before:
            continue
        if before is not None:
            counts[before] -= 1
        if after is None:
            del state[pod]
        else:
            state[pod] = after
            counts[after] += 1
        record(event["time"])
    return points
