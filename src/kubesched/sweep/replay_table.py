"""A replay's result as a table for notebooks (``kubesched replay --parquet FILE``), written by the
sweep's Parquet writer (:func:`~kubesched.sweep.summary.write_columns`).

One row per pod compared (the ReplayResult's ``pods``): its name, PriorityClass and creation, the
recorded side (``recorded.node``, ``recorded.bound``, ``recorded.waited``: the time to bind,
``recorded.deleted``, ``recorded.evicted``, ``recorded.preempted``, ``recorded.phase``), the replayed
side (``replay.node``, ``replay.bound``, ``replay.waited``, ``replay.preempted``,
``replay.preemptor``, ``replay.evicted``, ``replay.rejected``) and ``differs`` (the outcome is not
the recorded one: bound in one only, preempted in one only, or on another node where the recording
names it). Times are seconds from the window's start; a missing value is a null. The summary (the
document without its pods: history, window, seed, changes, agreement, by PriorityClass and the
run's summary) is the file's schema metadata, as JSON under :data:`SUMMARY_KEY`.
"""

from __future__ import annotations

import json
from typing import Any

from kubesched.report.replay_report import differs
from kubesched.sweep.summary import write_columns

SUMMARY_KEY = "kubesched.io/replay-summary"
RECORDED = ("node", "bound", "waited", "deleted", "evicted", "preempted", "phase")
REPLAYED = ("node", "bound", "waited", "preempted", "preemptor", "evicted", "rejected")


def pod_columns(document: dict[str, Any]) -> dict[str, list[Any]]:
    """The per-pod table's columns."""
    pods = document["pods"]
    columns: dict[str, list[Any]] = {"pod": [p["pod"] for p in pods],
                                     "priorityClass": [p["priorityClass"] for p in pods],
                                     "created": [float(p["created"]) for p in pods]}
    for side, keys in (("recorded", RECORDED), ("replay", REPLAYED)):
        for key in keys:
            values = [p[side].get(key) for p in pods]
            if key == "rejected":
                values = [bool(v) for v in values]
            elif key not in ("node", "phase", "preemptor"):
                values = [None if v is None else float(v) for v in values]
            columns[f"{side}.{key}"] = values
    columns["differs"] = [differs(p) for p in pods]
    return columns


def write_replay_parquet(document: dict[str, Any], path: str) -> None:
    """The ReplayResult ``document`` as a Parquet file: a row per pod, the summary as metadata."""
    summary = {k: v for k, v in document.items() if k != "pods"}
    columns = pod_columns(document)
    types = {k: "bool" if k in ("differs", "replay.rejected") else "string"
             if k in ("pod", "priorityClass", "recorded.node", "recorded.phase", "replay.node", "replay.preemptor")
             else "float64" for k in columns}
    write_columns(columns, path, {SUMMARY_KEY: json.dumps(summary, sort_keys=True)}, types)
