"""SVG charts of a SimulationResult's ``cluster`` section (kubelet evictions, cluster autoscaler).

:func:`cluster_charts` returns ``[(title, svg), ...]`` — nothing for a result whose scenario used
neither subsystem — for the HTML report (or anything else) to embed.
"""

from __future__ import annotations

from typing import Any

from kubesched.report.svg import step_chart

Points = list[tuple[float, float]]


def _extend(points: Points, end: float) -> Points:
    """Carry the last value to ``end`` so a step line spans the whole run."""
    if points and end > points[-1][0]:
        return [*points, (end, points[-1][1])]
    return points


def node_count_series(cluster: dict[str, Any], end: float) -> dict[str, Points]:
    """``{"all nodes": [...], "<group>": [...]}`` from ``cluster.autoscaler``."""
    autoscaler = cluster.get("autoscaler") or {}
    if not autoscaler.get("nodeCount"):
        return {}
    series: dict[str, Points] = {"all nodes": _extend([(float(t), float(n)) for t, n in autoscaler["nodeCount"]],
                                                      end)}
    groups = autoscaler.get("groups") or {}
    if len(groups) > 1:
        for name, group in sorted(groups.items()):
            series[name] = _extend([(float(t), float(n)) for t, n in group.get("nodeCount") or []], end)
    return series


def cumulative(times: list[float], end: float) -> Points:
    """A running count: 0 at time 0, +1 at each time (same-time increments merged)."""
    points: Points = [(0.0, 0.0)]
    for count, t in enumerate(sorted(times), start=1):
        if points[-1][0] == t:
            points[-1] = (t, float(count))
        else:
            points.append((t, float(count)))
    return _extend(points, end)


def eviction_series(cluster: dict[str, Any], end: float) -> dict[str, Points]:
    """Cumulative kubelet evictions (and autoscaler scale-down evictions, when there are any)."""
    series: dict[str, Points] = {}
    evictions = (cluster.get("eviction") or {}).get("evictions")
    if evictions is not None:
        series["kubelet evictions"] = cumulative([float(e["time"]) for e in evictions], end)
    scale_downs = (cluster.get("autoscaler") or {}).get("scaleDowns") or []
    moved = [float(s["time"]) for s in scale_downs for _ in s.get("pods") or []]
    if moved:
        series["pods moved by scale-down"] = cumulative(moved, end)
    return series


def cluster_charts(result: dict[str, Any]) -> list[tuple[str, str]]:
    """The charts for ``result["cluster"]``: node count over time, evictions over time."""
    cluster = result.get("cluster") or {}
    end = float(result.get("endTime") or 0.0)
    charts: list[tuple[str, str]] = []
    nodes = node_count_series(cluster, end)
    if nodes:
        hours = (cluster.get("autoscaler") or {}).get("nodeHours")
        title = "Nodes over time" + (f" ({hours:g} node-hours)" if hours is not None else "")
        charts.append((title, step_chart(title, nodes, x_label="simulated seconds", y_label="nodes",
                                         integer=True)))
    evictions = eviction_series(cluster, end)
    if evictions:
        title = "Evictions over time (cumulative)"
        charts.append((title, step_chart(title, evictions, x_label="simulated seconds", y_label="pods",
                                         integer=True)))
    return charts
