"""A recorded history as a sweep's (or a plan's) base: ``spec.base`` a mapping naming it.

::

    spec:
      base:
        history: audit/              # an audit log (file, .gz, or a directory of rotated files), or an
                                     # openb pod list (openb_pod_list_*.csv) or its directory
        format: auto                 # auto | audit | openb (auto: openb for a .csv or such a directory)
        snapshot: snap.yaml          # audit log only: the specs a Metadata-level log lacks, the cluster before it
        nodes: nodes.csv             # openb only: the node list (default: the one beside the pod list)
        from: 2024-05-07T09:00:00Z   # the window, as replay --from / --to
        to: 2024-05-07T12:00:00Z
        poolLabel: KEY               # the node label whose value is a node's pool (as replay --pool-label)

Paths are relative to the sweep file. The history is read once, by the command, as ``kubesched
replay`` reads it; each variant replays it (:mod:`.history_runs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesched.api.loader import load_scenario
from kubesched.replay import History, read_audit_log, read_openb
from kubesched.replay.timeline import Window

FIELDS = ("history", "format", "snapshot", "nodes", "from", "to", "poolLabel")
FORMATS = ("auto", "audit", "openb")
#: the axes a history base refuses: its pods are bare pods (no replicas to scale), and its recorded
#: times are the reference (steps moved in time would match no recorded creation)
REFUSED_AXES = {"replicaFactor": "a history's pods are its own recorded pods: there are no workloads' replicas to scale",
                "arrivalRate": "a history's arrivals are the recorded ones (the comparison matches each pod by its "
                               "creation time): replay a window of it instead (base.from, base.to)",
                "until": "a history runs to its window's end: give base.to instead"}


@dataclass(frozen=True)
class HistorySource:
    """Where a history base is and how to read it (paths resolved against the sweep file)."""

    path: str
    format: str = "auto"
    snapshot: str | None = None
    nodes: str | None = None
    start: str | None = None
    end: str | None = None
    pool_label: str | None = None

    @property
    def kind(self) -> str:
        """``audit`` or ``openb``: the format given, or the one the path has."""
        if self.format != "auto":
            return self.format
        path = Path(self.path)
        if path.suffix.lower() == ".csv" or (path.is_dir() and any(path.glob("openb_pod_list_*.csv"))):
            return "openb"
        return "audit"

    def origin(self) -> dict[str, str]:
        """What a sweep's result records of its base."""
        out = {"history": self.path, "format": self.kind}
        for key, value in (("snapshot", self.snapshot), ("nodes", self.nodes), ("from", self.start),
                           ("to", self.end)):
            if value is not None:
                out[key] = value
        return out

    def read(self) -> History:
        """The history, read (raises the readers' ReplayError, or a ManifestError for the snapshot)."""
        window = Window(self.start, self.end)
        if self.kind == "openb":
            return read_openb(self.path, nodes=self.nodes, window=window)
        snapshot = load_scenario(self.snapshot).objects if self.snapshot else []
        return read_audit_log(self.path, snapshot=snapshot, window=window)


def parse_history_source(raw: dict[str, Any], here: Path, error: Any) -> HistorySource | None:
    """``spec.base`` as a mapping, checked (each error told to ``error(path, message)``)."""
    ok = True
    for key in raw:
        if key not in FIELDS:
            error(f"spec.base.{key}", f"unknown field (a history base has: {', '.join(FIELDS)})")
            ok = False
    paths: dict[str, str | None] = {}
    for key in ("history", "snapshot", "nodes"):
        value = raw.get(key)
        if value is None and key != "history":
            paths[key] = None
            continue
        if not isinstance(value, str) or not value:
            error(f"spec.base.{key}", "a path relative to this file" + (" (the audit log or openb trace to replay)"
                                                                        if key == "history" else ""))
            ok = False
        elif not (here / value).exists():
            error(f"spec.base.{key}", f"no such file or directory: {here / value}")
            ok = False
        else:
            paths[key] = str(here / value)
    fmt = raw.get("format", "auto")
    if fmt not in FORMATS:
        error("spec.base.format", f"one of {', '.join(FORMATS)}")
        ok = False
    window: dict[str, str | None] = {}
    for key in ("from", "to", "poolLabel"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, str | int | float) or isinstance(value, bool)):
            error(f"spec.base.{key}", "a moment (an RFC 3339 time, a second of the trace, or a duration such as 30m)"
                  if key != "poolLabel" else "a node label's key")
            ok = False
        window[key] = None if value is None else str(value)
    if not ok:
        return None
    source = HistorySource(paths["history"] or "", fmt, paths["snapshot"], paths["nodes"], window["from"],
                           window["to"], window["poolLabel"])
    if source.kind == "openb" and source.snapshot:
        error("spec.base.snapshot", "a snapshot goes with an audit log (an openb trace has its own node list: nodes)")
        return None
    if source.kind == "audit" and source.nodes:
        error("spec.base.nodes", "a node list goes with an openb trace")
        return None
    return source
