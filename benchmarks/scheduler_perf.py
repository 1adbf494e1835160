"""Run upstream scheduler_perf workload files on the embedded cluster; write DataItems JSON.

Kubernetes measures kube-scheduler with ``test/integration/scheduler_perf``: a YAML list of test cases,
each a ``workloadTemplate`` (a list of operations) run once per ``workloads`` entry with its
``params``. This runner reads those files unchanged and runs them against kubesched's embedded
cluster (the scheduler and a bare API server, as scheduler_perf does: no controllers)::

    python benchmarks/scheduler_perf.py path/to/scheduler_perf/config/performance-config.yaml \\
        [--filter SchedulingBasic/5000Nodes] [--label performance] [--param initNodes=500] \\
        [--data-items out.json]

Template paths (``config/templates/pod-default.yaml``) are resolved against the directory of the
config file and its parent, as they are written relative to scheduler_perf's own directory.

Operations: ``createNodes`` (``count``/``countParam``, ``nodeTemplatePath``, ``labelNodePrepareStrategy``,
``uniqueNodeLabelStrategy``, ``nodeAllocatableStrategy.nodeAllocatable``), ``createNamespaces``
(``prefix``, ``count``/``countParam``, ``namespaceTemplatePath``), ``createPods`` (``count``/``countParam``,
``podTemplatePath`` or the test case's ``defaultPodTemplatePath``, ``namespace`` — default
``namespace-<op index>`` as upstream —, ``collectMetrics``, ``skipWaitToCompletion``),
``createPodSets``, ``barrier`` and ``sleep`` (simulated time). A workload using anything else
(``churn``, volumes, resource claims) is reported as skipped with the reason: it is not run halfway.

Scheduling throughput is measured as upstream's throughput collector does: while the pods of a
``collectMetrics`` op are scheduled, the number bound is sampled every second of wall-clock time and
each sample's rate goes into Average and the 50/90/95/99th percentiles (a phase shorter than one
second gives one sample: its pods over its duration). Each result is one ``DataItem``
(``labels.Metric = SchedulingThroughput``, ``labels.Name = <testcase>/<workload>/<namespace>``,
``unit = pods/s``), plus one with the process's peak resident memory (``Metric = PeakRSS``, MiB).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).parent))

from harness import Bench, Measurement  # noqa: E402

SUPPORTED_OPS = ("createNodes", "createNamespaces", "createPods", "createPodSets", "barrier", "sleep")
#: the node upstream creates when an op names no template (scheduler_perf's default node)
DEFAULT_NODE: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Node", "metadata": {"generateName": "scheduler-perf-"},
    "status": {"capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
               "conditions": [{"status": "True", "type": "Ready"}], "phase": "Running"}}
#: the pod of an op with no template (a pause container, upstream's basic pod)
DEFAULT_POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "pod-"},
    "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.9",
                             "resources": {"requests": {"cpu": "100m", "memory": "500Mi"},
                                           "limits": {"cpu": "100m", "memory": "500Mi"}}}]}}


class Unsupported(Exception):
    """A workload this runner cannot run faithfully."""


@dataclass
class Workload:
    testcase: str
    name: str
    params: dict[str, Any]
    labels: list[str]
    ops: list[dict[str, Any]]
    default_pod_template: str | None
    base: Path

    @property
    def full_name(self) -> str:
        return f"{self.testcase}/{self.name}"


@dataclass
class Result:
    workload: str
    data_items: list[dict[str, Any]] = field(default_factory=list)
    measurements: list[Measurement] = field(default_factory=list)
    skipped: str | None = None


def load_workloads(path: Path) -> list[Workload]:
    cases = yaml.safe_load(path.read_text()) or []
    out = []
    for case in cases:
        for workload in case.get("workloads") or []:
            out.append(Workload(case["name"], workload["name"], dict(workload.get("params") or {}),
                                list(workload.get("labels") or []) + list(case.get("labels") or []),
                                copy.deepcopy(case.get("workloadTemplate") or []), case.get("defaultPodTemplatePath"),
                                path.parent))
    return out


def _count(op: dict[str, Any], params: dict[str, Any]) -> int:
    if "countParam" in op:
        name = str(op["countParam"]).lstrip("$")
        if name not in params:
            raise Unsupported(f"parameter {name!r} is not set")
        return int(params[name])
    return int(op.get("count", 0))


def _template(base: Path, relative: str | None, default: dict[str, Any]) -> dict[str, Any]:
    if not relative:
        return copy.deepcopy(default)
    for root in (base, base.parent):
        candidate = root / relative
        if candidate.exists():
            return dict(yaml.safe_load(candidate.read_text()))
    raise Unsupported(f"template {relative} not found next to the config")


def _named(template: dict[str, Any], index: int, namespace: str | None = None) -> dict[str, Any]:
    obj = copy.deepcopy(template)
    meta = obj.setdefault("metadata", {})
    if not meta.get("name"):
        meta["name"] = f"{meta.pop('generateName', 'obj-')}{index}"
    else:
        meta["name"] = f"{meta['name']}-{index}"
        meta.pop("generateName", None)
    if namespace is not None:
        meta["namespace"] = namespace
    return obj


class Runner:
    """One workload on a fresh embedded cluster."""

    def __init__(self, workload: Workload, seed: int = 0) -> None:
        self.workload = workload
        self.bench = Bench(seed)
        self.rng = np.random.default_rng(seed)
        self.nodes = 0
        self.pods = 0
        self.result = Result(workload.full_name)

    def run(self) -> Result:
        for op in self.workload.ops:
            if op.get("opcode") not in SUPPORTED_OPS:
                raise Unsupported(f"opcode {op.get('opcode')!r}")
            for key in ("persistentVolumeTemplatePath", "persistentVolumeClaimTemplatePath"):
                if op.get(key):
                    raise Unsupported(f"{op['opcode']} with {key}")
        handlers = {"createNodes": self._create_nodes, "createNamespaces": self._create_namespaces,
                    "createPods": self._create_pods, "createPodSets": self._create_pod_sets,
                    "barrier": self._barrier, "sleep": self._sleep}
        for index, op in enumerate(self.workload.ops):
            handlers[op["opcode"]](index, op)
        self.bench.drain()
        return self.result

    # -- operations ----------------------------------------------------------------------------
    def _create_nodes(self, index: int, op: dict[str, Any]) -> None:
        template = _template(self.workload.base, op.get("nodeTemplatePath"), DEFAULT_NODE)
        label = op.get("labelNodePrepareStrategy") or {}
        unique = (op.get("uniqueNodeLabelStrategy") or {}).get("labelKey")
        extra = ((op.get("nodeAllocatableStrategy") or {}).get("nodeAllocatable")) or {}
        nodes = []
        for _ in range(_count(op, self.workload.params)):
            node = _named(template, self.nodes)
            self.nodes += 1
            labels = node["metadata"].setdefault("labels", {})
            labels.setdefault("kubernetes.io/hostname", node["metadata"]["name"])
            if label:
                values = label.get("labelValues") or []
                labels[label["labelKey"]] = values[int(self.rng.integers(len(values)))]
            if unique:
                labels[unique] = node["metadata"]["name"]
            status = node.setdefault("status", {})
            for section in ("capacity", "allocatable"):
                if section in status or section == "capacity":
                    status[section] = {**(status.get(section) or {}), **extra}
            nodes.append(node)
        self.bench.create(nodes)

    def _create_namespaces(self, index: int, op: dict[str, Any]) -> None:
        template = _template(self.workload.base, op.get("namespaceTemplatePath"),
                             {"apiVersion": "v1", "kind": "Namespace", "metadata": {}})
        for i in range(_count(op, self.workload.params)):
            ns = copy.deepcopy(template)
            ns.setdefault("metadata", {})["name"] = f"{op['prefix']}-{i}"
            self.bench.create([ns])

    def _create_pods(self, index: int, op: dict[str, Any], namespace: str | None = None) -> None:
        namespace = namespace or op.get("namespace") or f"namespace-{index}"
        relative = op.get("podTemplatePath") or self.workload.default_pod_template
        template = _template(self.workload.base, relative, DEFAULT_POD)
        pods = []
        for _ in range(_count(op, self.workload.params)):
            pods.append(_named(template, self.pods, namespace))
            self.pods += 1
        if not op.get("collectMetrics"):
            self.bench.create(pods)
            if not op.get("skipWaitToCompletion"):
                self.bench.drain()
            return
        self._measure(pods, namespace)

    def _create_pod_sets(self, index: int, op: dict[str, Any]) -> None:
        inner = op.get("createPodsOp") or {}
        for i in range(_count(op, self.workload.params)):
            self._create_pods(index, inner, f"{op['namespacePrefix']}-{i}")

    def _barrier(self, index: int, op: dict[str, Any]) -> None:
        self.bench.drain()

    def _sleep(self, index: int, op: dict[str, Any]) -> None:
        from kubesched.api.durations import parse_duration

        self.bench.advance(parse_duration(op.get("duration") or "0s"))

    # -- measurement ---------------------------------------------------------------------------
    def _measure(self, pods: list[dict[str, Any]], namespace: str) -> None:
        bench = self.bench
        scheduled = 0
        samples: list[float] = []
        start = last = time.perf_counter()
        at_last = 0

        def after_cycle() -> None:
            nonlocal scheduled, last, at_last
            scheduled += 1
            now = time.perf_counter()
            if now - last >= 1.0:
                bound = bench.bound_in(namespace)
                samples.append((bound - at_last) / (now - last))
                last, at_last = now, bound

        bench.create(pods)
        while bench.scheduler_loop.run_instant(after_cycle):
            pass
        seconds = time.perf_counter() - start
        bound = bench.bound_in(namespace)
        if not samples:
            samples.append(bound / seconds if seconds else 0.0)
        name = f"{self.workload.full_name}/{namespace}"
        self.result.measurements.append(Measurement(name, bound, seconds, 0.0))
        ordered = sorted(samples)

        def percentile(p: float) -> float:
            return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]

        self.result.data_items.append({
            "data": {"Average": sum(samples) / len(samples), "Perc50": percentile(50), "Perc90": percentile(90),
                     "Perc95": percentile(95), "Perc99": percentile(99)},
            "unit": "pods/s", "labels": {"Metric": "SchedulingThroughput", "Name": name}})
        self.result.data_items.append({"data": {"Max": Measurement.max_rss_mib()}, "unit": "MiB",
                                       "labels": {"Metric": "PeakRSS", "Name": name}})


def run_all(config: Path, *, filters: list[str] | None = None, labels: list[str] | None = None,
            overrides: dict[str, Any] | None = None, seed: int = 0) -> list[Result]:
    results = []
    for workload in load_workloads(config):
        if filters and not any(f in workload.full_name for f in filters):
            continue
        if labels and not set(labels) <= set(workload.labels):
            continue
        workload.params.update(overrides or {})
        try:
            results.append(Runner(workload, seed).run())
        except Unsupported as err:
            results.append(Result(workload.full_name, skipped=str(err)))
    return results


def data_items(results: list[Result]) -> dict[str, Any]:
    """scheduler_perf's DataItems document."""
    return {"version": "v1", "dataItems": [item for r in results for item in r.data_items]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", type=Path, help="a scheduler_perf config (e.g. performance-config.yaml)")
    parser.add_argument("--filter", action="append", default=[], help="run workloads whose name contains this")
    parser.add_argument("--label", action="append", default=[], help="run workloads carrying every such label")
    parser.add_argument("--param", action="append", default=[], help="override a parameter: name=value")
    parser.add_argument("--data-items", type=Path, help="write the DataItems JSON here")
    args = parser.parse_args()
    overrides = {k: int(v) if v.isdigit() else v for k, v in (p.split("=", 1) for p in args.param)}
    results = run_all(args.config, filters=args.filter, labels=args.label, overrides=overrides)
    for result in results:
        if result.skipped:
            print(f"{result.workload:<40} skipped: {result.skipped}")
        for measurement in result.measurements:
            print(measurement.line(), flush=True)
    if args.data_items:
        args.data_items.write_text(json.dumps(data_items(results), indent=2) + "\n")


if __name__ == "__main__":
    main()
