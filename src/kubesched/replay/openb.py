"""Alibaba's GPU cluster trace (``cluster-trace-gpu-v2023``, the "openb" CSV files) read as a
history to replay. The mapping (docs/replay.md has it as a table):

* a node row (``sn,cpu_milli,memory_mib,gpu,model``) is a Node with that cpu and memory,
  ``nvidia.com/gpu`` = ``gpu`` and ``kubesched.io/gpu-milli`` = 1000 × ``gpu`` allocatable, labelled
  with its GPU model (``kubesched.io/gpu-model``; and ``node.kubernetes.io/instance-type``, so that
  nodes are pooled by model), 256 pods;
* a pod row (``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
  deletion_time,scheduled_time``) is a Pod created at ``creation_time`` requesting that cpu and
  memory; a pod of whole GPUs requests ``nvidia.com/gpu`` = ``num_gpu`` and as many thousandths of
  ``kubesched.io/gpu-milli``; a GPU-sharing pod (``num_gpu`` 1, ``gpu_milli`` < 1000) requests only
  ``gpu_milli`` thousandths (the approximation: a node's GPUs are one pool of thousandths, so two
  shares that would each need a device of their own may share a node the trace could not give
  them); ``gpu_spec`` (``V100M16|V100M32``) is a required node affinity on the model label;
  ``qos`` is a PriorityClass (:data:`QOS_CLASSES`);
* a pod that was scheduled and deleted runs as long as it ran (``kubesched.io/run-for``:
  ``deletion_time`` - ``scheduled_time``), from whenever the replay starts it; one never scheduled
  is deleted at its ``deletion_time`` (its user gave up).

The trace's ``scheduled_time`` is the reference (it has no node names: only whether and when a pod
was bound is compared).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from kubesched.api.loader import Scenario, Step
from kubesched.k8s.objects import DEFAULT_NAMESPACE, Obj
from kubesched.replay.history import History, ReadReport, Recorded, ReplayError
from kubesched.replay.timeline import RUN_FOR, Window

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
               "creation_time", "deletion_time", "scheduled_time")
GPU = "nvidia.com/gpu"
GPU_MILLI = "kubesched.io/gpu-milli"
GPU_MODEL_LABEL = "kubesched.io/gpu-model"
POOL_LABEL = "node.kubernetes.io/instance-type"
NODE_PODS = 256
#: the trace's QoS -> (PriorityClass, value): latency-sensitive first, best effort last
QOS_CLASSES = {"LSR": ("openb-lsr", 1100), "LS": ("openb-ls", 1000), "Guaranteed": ("openb-guaranteed", 800),
               "Burstable": ("openb-burstable", 500), "BE": ("openb-be", 0)}
NODE_LIST = "openb_node_list_all_node.csv"


def _blank(value: str | None) -> bool:
    return value is None or value.strip() in ("", "nan", "NaN", "None")


def _number(row: dict[str, str], column: str, where: str) -> float | None:
    value = row.get(column)
    if _blank(value):
        return None
    try:
        number = float(value or "")
    except ValueError:
        raise ReplayError(f"{where}: {column} {value!r} is not a number") from None
    if not math.isfinite(number) or number < 0:
        raise ReplayError(f"{where}: {column} {value!r} is not a number of 0 or more")
    return number


def _rows(path: Path, columns: tuple[str, ...]) -> list[tuple[str, dict[str, str]]]:
    try:
        with path.open(newline="", encoding="utf-8") as stream:
            reader = csv.DictReader(stream)
            header = [c.strip() for c in reader.fieldnames or []]
            missing = [c for c in columns if c not in header]
            if missing:
                raise ReplayError(f"{path}: missing column(s) {', '.join(missing)} (expected {','.join(columns)})")
            return [(f"{path.name}: row {i}", {k.strip(): v for k, v in row.items() if k is not None})
                    for i, row in enumerate(reader, 2)]
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise ReplayError(f"{path}: cannot read: {err}") from err


def _node(row: dict[str, str], where: str) -> Obj:
    cpu = _number(row, "cpu_milli", where) or 0
    memory = _number(row, "memory_mib", where) or 0
    gpus = int(_number(row, "gpu", where) or 0)
    model = "" if _blank(row.get("model")) else row["model"].strip()
    name = row["sn"].strip()
    allocatable = {"cpu": f"{int(cpu)}m", "memory": f"{int(memory)}Mi", "pods": str(NODE_PODS)}
    labels = {"kubernetes.io/hostname": name, POOL_LABEL: model or "cpu"}
    if gpus:
        allocatable[GPU] = str(gpus)
        allocatable[GPU_MILLI] = str(gpus * 1000)
    if model:
        labels[GPU_MODEL_LABEL] = model
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"capacity": dict(allocatable), "allocatable": allocatable}}


def _pod(row: dict[str, str], where: str, report: ReadReport) -> Obj:
    cpu = _number(row, "cpu_milli", where) or 0
    memory = _number(row, "memory_mib", where) or 0
    gpus = int(_number(row, "num_gpu", where) or 0)
    milli = _number(row, "gpu_milli", where)
    requests = {"cpu": f"{int(cpu)}m", "memory": f"{int(memory)}Mi"}
    if gpus:
        share = int(milli) if milli is not None else 1000
        if gpus == 1 and share < 1000:
            requests[GPU_MILLI] = str(max(share, 1))
            report.counts["GPU-sharing pods (gpu_milli < 1000, approximated)"] += 1
        else:
            requests[GPU] = str(gpus)
            requests[GPU_MILLI] = str(gpus * 1000)
    spec: Obj = {"containers": [{"name": "task", "image": "openb-task",
                                 "resources": {"requests": requests, "limits": dict(requests)}}]}
    models = [] if _blank(row.get("gpu_spec")) else [m.strip() for m in row["gpu_spec"].split("|") if m.strip()]
    if models:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": GPU_MODEL_LABEL, "operator": "In", "values": models}]}]}}}
    qos = (row.get("qos") or "").strip()
    if qos not in QOS_CLASSES:
        raise ReplayError(f"{where}: qos {qos!r} is none of {', '.join(QOS_CLASSES)}")
    spec["priorityClassName"] = QOS_CLASSES[qos][0]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": row["name"].strip(), "namespace": DEFAULT_NAMESPACE, "labels": {"openb/qos": qos}},
            "spec": spec}


def pod_list_of(path: Path) -> Path:
    """The pod list of a HISTORY argument: the file, or the one ``openb_pod_list_*.csv`` of a directory."""
    if path.is_dir():
        lists = sorted(path.glob("openb_pod_list_*.csv"))
        if len(lists) != 1:
            raise ReplayError(f"{path}: expected one openb_pod_list_*.csv in the directory, found "
                              f"{len(lists)}{': ' + ', '.join(p.name for p in lists) if lists else ''}; name the file")
        return lists[0]
    return path


def read_openb(path: str | Path, *, nodes: str | Path | None = None, window: Window | None = None,
               seed: int = 0) -> History:
    """The history of an openb pod list (``path``: the CSV, or a directory holding one), on the
    nodes of ``nodes`` (default: ``openb_node_list_all_node.csv`` beside the pod list). ``window``:
    moments of the trace in seconds (or durations from its first creation)."""
    pods_path = pod_list_of(Path(path))
    nodes_path = Path(nodes) if nodes is not None else pods_path.parent / NODE_LIST
    if not nodes_path.exists():
        raise ReplayError(f"{nodes_path}: no node list (give it with --nodes)")
    report = ReadReport(source=str(pods_path), format="openb trace")
    node_objs = [_node(row, where) for where, row in _rows(nodes_path, NODE_COLUMNS)]
    report.counts["nodes"] = len(node_objs)
    rows = []
    for where, row in _rows(pods_path, POD_COLUMNS):
        created = _number(row, "creation_time", where)
        if created is None or _blank(row.get("name")):
            report.skip("pods without a name or a creation_time", where)
            continue
        rows.append((created, where, row))
    if not rows:
        raise ReplayError(f"{pods_path}: no pod to replay")
    rows.sort(key=lambda r: (r[0], r[1]))
    first = rows[0][0]
    last = max(max(c, _number(r, "deletion_time", w) or 0) for c, w, r in rows)
    start, end = (window or Window()).resolve(first, last, numbers_absolute=True)
    steps: list[Step] = []
    recorded: list[Recorded] = []
    for created, where, row in rows:
        if not start <= created <= end:
            report.counts["pods outside the window"] += 1
            continue
        pod = _pod(row, where, report)
        name = pod["metadata"]["name"]
        at = round(created - start, 6)
        deleted = _number(row, "deletion_time", where)
        scheduled = _number(row, "scheduled_time", where)
        rec = Recorded(f"{DEFAULT_NAMESPACE}/{name}", at, pod["spec"]["priorityClassName"],
                       phase=(row.get("pod_phase") or "").strip() or None)
        if scheduled is not None:
            rec.bound = round(scheduled - start, 6)
        if deleted is not None:
            rec.deleted = round(deleted - start, 6)
            if scheduled is not None:
                pod["metadata"]["annotations"] = {RUN_FOR: f"{max(deleted - scheduled, 0):g}s"}
            elif deleted - start <= end - start:
                steps.append(Step(at=rec.deleted, action="delete", kind="Pod", name=name, namespace=DEFAULT_NAMESPACE,
                                  source=where))
        steps.append(Step(at=at, action="create", obj=pod, kind="Pod", name=name, namespace=DEFAULT_NAMESPACE,
                          source=where))
        recorded.append(rec)
    steps.sort(key=lambda s: s.at)
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value} for name, value in QOS_CLASSES.values()]
    scenario = Scenario(name=pods_path.stem, seed=seed, until=round(end - start, 6), objects=[*classes, *node_objs],
                        steps=steps, sources=[f"{nodes_path.name}"] * (len(classes) + len(node_objs)))
    report.counts["pods compared"] = len(recorded)
    report.counts["steps"] = len(steps)
    return History(scenario, recorded, report, start=f"{start:.0f}" if start.is_integer() else f"{start}",
                   nodes={n["metadata"]["name"]: n for n in node_objs})
