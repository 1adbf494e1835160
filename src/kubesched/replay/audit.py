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
from pathlib import Path
from typing import IO, Any, cast

import orjson

from kubesched.k8s.objects import TERMINAL_PHASES, Obj
from kubesched.k8s.timefmt import parse_rfc3339
from kubesched.replay.history import History, ReadReport, ReplayError
from kubesched.replay.owners import WORKLOADS
from kubesched.replay.timeline import Timeline, Window

#: the resources a replay plays: each write to them becomes a step or part of the reference
REPLAYED = ("pods", "nodes", "priorityclasses", "poddisruptionbudgets", *WORKLOADS)
#: the verbs that change something (the others read)
WRITES = ("create", "update", "patch", "delete", "deletecollection")
LOG_SUFFIXES = (".log", ".json", ".jsonl", ".ndjson", ".gz")


class AuditEvent:
    """One write as the replay needs it. ``at``: its ``stageTimestamp`` (seconds, in the simulated
    epoch's scale: only differences matter); ``received``: its ``requestReceivedTimestamp`` (the
    order in which a scheduler's binding requests left it: the order of its decisions); ``obj``:
    the object as stored (``responseObject``) or else as sent (``requestObject``), when the level
    logged one; ``request``: the request body (a patch, DeleteOptions, a Binding, an Eviction).

    Both objects are kept reduced to what the timeline reads (:func:`_reduced`) and encoded as JSON
    text, decoded each time they are read: a log of a million writes is held in a few hundred
    bytes a write, not in the many kilobytes of its decoded objects."""

    __slots__ = ("at", "received", "seq", "verb", "resource", "subresource", "namespace", "name", "user",
                 "_obj", "_request", "where")

    def __init__(self, at: float, seq: int, verb: str, resource: str, subresource: str, namespace: str, name: str,
                 user: str, obj: Obj | None, request: Obj | None, where: str, received: float | None = None) -> None:
        self.at, self.seq, self.verb, self.resource, self.subresource = at, seq, verb, resource, subresource
        self.namespace, self.name, self.user, self.where = namespace, name, user, where
        self.received = at if received is None else received
        # as text: orjson's bytes keep the capacity of its write buffer (kilobytes), a str its length
        self._obj = None if obj is None else orjson.dumps(obj).decode()
        self._request = None if request is None else orjson.dumps(request).decode()

    @property
    def obj(self) -> Obj | None:
        return None if self._obj is None else cast(Obj, orjson.loads(self._obj))

    @property
    def request(self) -> Obj | None:
        return None if self._request is None else cast(Obj, orjson.loads(self._request))

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


#: what a pod's status keeps (its end, its start, the scheduler's nomination, a kubelet's reason)
_POD_STATUS = ("phase", "startTime", "nominatedNodeName", "reason")
#: what a node's status keeps (the scheduler reads these)
_NODE_STATUS = ("capacity", "allocatable")


def _reduced(obj: Obj | None, resource: str) -> Obj | None:
    """``obj`` without what no replay reads: its managed fields (often most of an object), and for
    pods and nodes all of their status but :data:`_POD_STATUS` and :data:`_NODE_STATUS`."""
    if obj is None:
        return None
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    status = out.get("status")
    if isinstance(status, dict) and resource in ("pods", "nodes"):
        kept = _POD_STATUS if resource == "pods" else _NODE_STATUS
        out["status"] = {k: status[k] for k in kept if k in status}
    return out


def _binding(request: Obj | None) -> Obj | None:
    target = (request or {}).get("target")
    if (request or {}).get("kind") != "Binding" or not isinstance(target, dict):
        return None
    return {"kind": "Binding", "target": {"name": target.get("name")}}


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


class _Seen:
    """What the scan remembers across lines: the auditIDs read (duplicates), and per pod the last
    nomination and whether a start time was kept (a status write that repeats them is dropped)."""

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.nominated: dict[str, str] = {}
        self.started: set[str] = set()


def scan(paths: list[Path], report: ReadReport) -> list[AuditEvent]:
    """The writes a replay uses, in the order they happened (by ``stageTimestamp``, the file
    order breaking ties), everything else counted in ``report``."""
    events: list[AuditEvent] = []
    seen = _Seen()
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


def _kept_status(key: str, obj: Obj | None, request: Obj | None, seen: _Seen) -> Obj | None:
    """A pod's status write as the replay keeps it (``{"status": {...}}``), or None when it tells
    nothing a replay uses: it neither ends the pod (phase Succeeded or Failed), nor changes its
    nomination, nor gives its first start time."""
    status: dict[str, Any] = {}
    for source in (request, obj):  # the stored object's fields win
        part = (source or {}).get("status")
        if isinstance(part, dict):
            status.update({k: part[k] for k in _POD_STATUS if k in part})
    keep = status.get("phase") in TERMINAL_PHASES
    nominated = status.get("nominatedNodeName") or ""
    if nominated != seen.nominated.get(key, ""):
        seen.nominated[key] = nominated
        keep = True
    if status.get("startTime") and key not in seen.started:
        seen.started.add(key)
        keep = True
    return {"status": status} if keep else None


def _event(line: bytes, where: str, seq: int, seen: _Seen, report: ReadReport) -> AuditEvent | None:
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
    if audit_id in seen.ids:
        report.skip("duplicate events (auditID seen before)", where)
        return None
    seen.ids.add(audit_id)
    try:
        at = parse_rfc3339(raw.get("stageTimestamp"))
    except (TypeError, ValueError):
        report.skip("events without a valid stageTimestamp", where)
        return None
    try:
        received = parse_rfc3339(raw.get("requestReceivedTimestamp"))
    except (TypeError, ValueError):
        received = at
    subresource = ref.get("subresource") or ""
    if resource == "nodes" and subresource:
        report.counts["node status writes (not replayed)"] += 1  # heartbeats: dropped here
        return None
    if resource in WORKLOADS and subresource == "status":
        report.counts["workload status writes (their controllers' own)"] += 1
        return None
    kind = KINDS[resource] if not subresource else None
    obj = _object_of(raw.get("responseObject"), kind) or _object_of(raw.get("requestObject"), kind)
    name = ref.get("name") or ((obj or {}).get("metadata") or {}).get("name") or ""
    if not name:
        report.skip(f"{resource} {verb}s without a name (generateName at Metadata level)", where)
        return None
    namespace = ref.get("namespace") or ""
    user = (raw.get("user") or {}).get("username") or ""
    request = raw.get("requestObject") if isinstance(raw.get("requestObject"), dict) else None
    if resource == "pods" and subresource == "status":
        kept = _kept_status(f"{namespace}/{name}" if namespace else name, obj, request, seen)
        if kept is None:
            report.counts["pod status writes that change nothing replayed (dropped)"] += 1
            return None
        obj, request = kept, None
    elif subresource == "binding":
        obj, request = None, _binding(request)
    else:
        obj = _reduced(obj, resource)
        # a create's or update's body is the object itself: kept once (as stored, when logged)
        request = None if obj is not None and verb in ("create", "update") and not subresource \
            else _reduced(request, resource)
    return AuditEvent(at, seq, verb, resource, subresource, namespace, name, user, obj, request, where, received)


def read_audit_log(path: str | Path, *, snapshot: list[Obj] | None = None, window: Window | None = None,
                   seed: int = 0, follow: bool = False) -> History:
    """The history an audit log records (a file, ``.gz`` or not, or a directory of rotated files
    read in name order). ``snapshot``: objects (a ``kubectl get -o yaml`` dump's) that supply the
    specs a Metadata-level log lacks, and the nodes, classes, budgets and running pods that were
    there before the log begins. ``window``: the part of the log to replay (what happened before
    it is the cluster the replay starts from). Raises :class:`ReplayError` for a log with nothing
    to replay. ``follow``: read for a replay that follows the recording
    (:mod:`kubesched.replay.follow`): every pod is created as recorded, none by a replayed
    controller (workloads are not replayed)."""
    p = Path(path)
    report = ReadReport(source=str(p), format="audit log")
    events = scan(_files(p), report)
    if not events:
        raise ReplayError(f"{p}: no successful write to pods, nodes, PriorityClasses or PodDisruptionBudgets "
                          f"in the log ({report.counts['lines']} line(s) read)")
    timeline = Timeline(report, snapshot or [], window or Window(), follow=follow)
    return timeline.build(events, name=p.stem or p.name, seed=seed)
