"""The API server's audit log (``--audit-log-path``: one ``audit.k8s.io/v1`` Event per line) read as
a history to replay.

The file (or a directory of rotated files, ``.gz`` ones too) is streamed line by line: only the
events a replay uses are kept, each reduced to what it needs (:class:`AuditEvent`), so a log of
gigabytes of ``get``/``watch`` requests and lease renewals is read in the memory of its writes to
pods, nodes, PriorityClasses, PodDisruptionBudgets and workloads (Deployments, ReplicaSets,
StatefulSets, Jobs). A request is used once: at its
``ResponseComplete`` stage, when its response succeeded (2xx). Everything else is counted in the
:class:`~kubesched.replay.history.ReadReport`: lines that are not JSON (a log cut mid-line),
duplicates (an ``auditID`` seen before: a log shipped twice), failed requests, writes to other
resources; events written out of order (a ``stageTimestamp`` earlier than one before it: the API
server writes events as requests finish, from many goroutines) are counted and put in order.

What each level gives: ``RequestResponse`` the object as stored (``responseObject``); ``Request``
the object as sent, enough for a pod's spec, and a binding's node; ``Metadata`` neither, so a pod's
spec comes from ``--snapshot`` (by namespace and name), and a binding says when but not where (the
snapshot's ``nodeName`` says where, when it has the pod). :mod:`.timeline` turns the events into
the scenario and the recorded outcomes.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import orjson

from kubesched.k8s.objects import Obj
from kubesched.k8s.timefmt import parse_rfc3339
from kubesched.replay.history import History, ReadReport, ReplayError
from kubesched.replay.owners import WORKLOADS
from kubesched.replay.timeline import Timeline, Window

#: the resources a replay plays: each write to them becomes a step or part of the reference
REPLAYED = ("pods", "nodes", "priorityclasses", "poddisruptionbudgets", *WORKLOADS)
#: the verbs that change something (the others read)
WRITES = ("create", "update", "patch", "delete", "deletecollection")
LOG_SUFFIXES = (".log", ".json", ".jsonl", ".ndjson", ".gz")


@dataclass(slots=True)
class AuditEvent:
    """One write as the replay needs it. ``at``: its ``stageTimestamp`` (seconds, in the simulated
    epoch's scale: only differences matter); ``obj``: the object as stored (``responseObject``) or
    else as sent (``requestObject``), when the level logged one; ``request``: the request body (a
    patch, DeleteOptions, a Binding, an Eviction)."""

    at: float
    seq: int
    verb: str
    resource: str
    subresource: str
    namespace: str
    name: str
    user: str
    obj: Obj | None
    request: Obj | None
    where: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(LOG_SUFFIXES))
        if not files:
            raise ReplayError(f"{path}: no audit log files (*.log, *.json, *.jsonl, *.gz) in the directory")
        return files
    if not path.exists():
        raise ReplayError(f"{path}: no such file or directory")
    return [path]


def _open(path: Path) -> IO[bytes]:
    if path.name.endswith(".gz"):
        return cast(IO[bytes], gzip.GzipFile(path, "rb"))
    return path.open("rb")


def _object_of(value: Any, kind: str | None = None) -> Obj | None:
    if isinstance(value, dict) and value.get("metadata") is not None and (kind is None or value.get("kind") == kind):
        return value
    return None


KINDS = {"pods": "Pod", "nodes": "Node", "priorityclasses": "PriorityClass",
         "poddisruptionbudgets": "PodDisruptionBudget", **WORKLOADS}


def scan(paths: list[Path], report: ReadReport) -> list[AuditEvent]:
    """The writes a replay uses, in the order they happened (by ``stageTimestamp``, the file
    order breaking ties), everything else counted in ``report``."""
    events: list[AuditEvent] = []
    seen: set[str] = set()
    latest = float("-inf")
    seq = 0
    for path in paths:
        try:
            with _open(path) as stream:
                for number, line in enumerate(stream, 1):
                    seq += 1
                    event = _event(line, f"{path.name}:{number}", seq, seen, report)
                    if event is None:
                        continue
                    if event.at < latest:
                        report.counts["events out of order (sorted)"] += 1
                    latest = max(latest, event.at)
                    events.append(event)
        except (OSError, EOFError, gzip.BadGzipFile) as err:
            raise ReplayError(f"{path}: cannot read: {err}") from err
    events.sort(key=lambda e: (e.at, e.seq))
    return events


def _event(line: bytes, where: str, seq: int, seen: set[str], report: ReadReport) -> AuditEvent | None:
    text = line.strip()
    if not text:
        return None
    report.counts["lines"] += 1
    try:
        raw = orjson.loads(text)
    except orjson.JSONDecodeError:
        report.skip("truncated or invalid lines", where)
        return None
    if not isinstance(raw, dict) or raw.get("kind") != "Event" or not str(raw.get("apiVersion", "")).startswith("audit.k8s.io/"):
        report.skip("lines that are not audit Events", where)
        return None
    report.counts[f"events at {raw.get('level') or 'no'} level"] += 1
    if raw.get("stage") != "ResponseComplete":
        # RequestReceived, ResponseStarted: the request's ResponseComplete event follows
        report.counts["events of earlier stages (ignored)"] += 1
        return None
    verb = raw.get("verb")
    if verb not in WRITES:
        report.counts["read requests (ignored)"] += 1
        return None
    ref = raw.get("objectRef")
    if not isinstance(ref, dict) or not ref.get("resource"):
        report.skip("writes without an objectRef", where)
        return None
    resource = ref["resource"]
    if resource not in REPLAYED:
        report.unknown_resources[resource] += 1
        return None
    status = raw.get("responseStatus") or {}
    code = status.get("code") if isinstance(status, dict) else None
    if not isinstance(code, int) or not 200 <= code < 300:
        report.counts["failed requests (ignored)"] += 1
        return None
    audit_id = raw.get("auditID")
    if not isinstance(audit_id, str) or not audit_id:
        report.skip("events without an auditID", where)
        return None
    if audit_id in seen:
        report.skip("duplicate events (auditID seen before)", where)
        return None
    seen.add(audit_id)
    stamp = raw.get("stageTimestamp")
    try:
        at = parse_rfc3339(stamp)
    except (TypeError, ValueError):
        report.skip("events without a valid stageTimestamp", where)
        return None
    subresource = ref.get("subresource") or ""
    kind = KINDS[resource] if not subresource else None
    obj = _object_of(raw.get("responseObject"), kind) or _object_of(raw.get("requestObject"), kind)
    name = ref.get("name") or ((obj or {}).get("metadata") or {}).get("name") or ""
    if not name:
        report.skip(f"{resource} {verb}s without a name (generateName at Metadata level)", where)
        return None
    user = (raw.get("user") or {}).get("username") or ""
    request = raw.get("requestObject") if isinstance(raw.get("requestObject"), dict) else None
    return AuditEvent(at, seq, verb, resource, subresource, ref.get("namespace") or "", name, user, obj, request,
                      where)


def read_audit_log(path: str | Path, *, snapshot: list[Obj] | None = None, window: Window | None = None,
                   seed: int = 0) -> History:
    """The history an audit log records (a file, ``.gz`` or not, or a directory of rotated files
    read in name order). ``snapshot``: objects (a ``kubectl get -o yaml`` dump's) that supply the
    specs a Metadata-level log lacks, and the nodes, classes, budgets and running pods that were
    there before the log begins. ``window``: the part of the log to replay (what happened before
    it is the cluster the replay starts from). Raises :class:`ReplayError` for a log with nothing
    to replay."""
    p = Path(path)
    report = ReadReport(source=str(p), format="audit log")
    events = scan(_files(p), report)
    if not events:
        raise ReplayError(f"{p}: no successful write to pods, nodes, PriorityClasses or PodDisruptionBudgets "
                          f"in the log ({report.counts['lines']} line(s) read)")
    timeline = Timeline(report, snapshot or [], window or Window())
    return timeline.build(events, name=p.stem or p.name, seed=seed)
