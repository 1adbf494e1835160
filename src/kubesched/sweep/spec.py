"""The sweep file: a base cluster and the axes whose product is the set of variants.

::

    apiVersion: kubesched.io/v1alpha1
    kind: Sweep
    metadata: {name: preemption-plans}
    spec:
      base: cluster.yaml            # a scenario, manifests or a kubectl dump (relative to this file);
                                    # left out or replaced: a live cluster (sweep --kubeconfig FILE);
                                    # or a recorded history: {history: audit.log, from: ..., to: ...}
                                    # (:mod:`.history_source`), each variant a replay of it
      until: 10m                    # optional: the simulated end, as simulate --until
      seeds: [1, 2, 3]              # or {first: 1, count: 20}; default: the base's own seed
      schedulerConfigs:             # name -> KubeSchedulerConfiguration file ("": the base's own)
        default: ""
        no-preemption: no-preemption.yaml
      changes:                      # name -> what-if changes, as kubesched whatif takes them
        as-is: {}
        drain-a: {drain: [node-a], ignoreDaemonSets: true, force: true}
        critical: {apply: [critical.yaml], priorityClass: ["app=etl:critical"], enablePreemption: true}
      nodePool: {template: node-a, counts: [4, 6, 8]}   # the template and count-1 copies of it, or
      # nodePool: {selector: {matchLabels: {eks.amazonaws.com/nodegroup: ng-a}}, counts: [2, 6, 8]}
      #   the Nodes the selector matches, and copies of the first of them up to each count (or,
      #   below their number, all but the last of them)
      replicaFactor: [1, 1.5]       # workloads' replicas scaled (rounded half up)
      arrivalRate: [1, 2]           # the scenario's steps come this many times as fast

Every axis is optional; a variant takes one value of each axis given. A variant is one ordinary
simulation, the one ``kubesched simulate`` (no change set) or the changed side of ``kubesched
whatif`` (a change set) runs with the same inputs. The file is checked whole before anything runs:
an error names the file, the document and the field.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesched.analysis.whatif.apply import check_changes
from kubesched.analysis.whatif.changes import Changes, WhatIfError
from kubesched.api.durations import parse_duration
from kubesched.api.errors import Location, ManifestError
from kubesched.api.loader import Scenario, read_scheduler_configuration
from kubesched.api.manifest_text import yaml_documents
from kubesched.api.selectors import LabelSelector
from kubesched.scheduler.config import ConfigError, parse_configuration
from kubesched.sweep.change_set import parse_change_set
from kubesched.sweep.history_source import REFUSED_AXES, HistorySource, parse_history_source

SWEEP_API_VERSION = "kubesched.io/v1alpha1"
SWEEP_KIND = "Sweep"
_SPEC_FIELDS = ("base", "until", "seeds", "schedulerConfigs", "changes", "nodePool", "replicaFactor", "arrivalRate")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


@dataclass(frozen=True)
class Variant:
    """One point of the product of the axes (None: the axis is not swept)."""

    seed: int
    config: str | None = None
    change: str | None = None
    pool_count: int | None = None
    replica_factor: float | None = None
    arrival_rate: float | None = None

    def axes(self, with_seed: bool = True) -> dict[str, Any]:
        """The axes' values, by the names the sweep file gives the axes."""
        out: dict[str, Any] = {}
        for name, value in (("schedulerConfig", self.config), ("change", self.change),
                            ("nodePoolCount", self.pool_count), ("replicaFactor", self.replica_factor),
                            ("arrivalRate", self.arrival_rate)):
            if value is not None:
                out[name] = value
        if with_seed:
            out["seed"] = self.seed
        return out

    @property
    def id(self) -> str:
        """A name of the variant that is also a file name: ``change=drain-a,seed=3``."""
        return ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.axes().items())

    @property
    def configuration(self) -> str:
        """The variant without its seed: what is aggregated over seeds."""
        return ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in self.axes(with_seed=False).items()) or "base"


@dataclass
class Sweep:
    """A checked sweep file, with what its axes name read (configurations, --apply objects)."""

    name: str
    file: str
    base_path: str
    until: float | None = None
    seeds: list[int] | None = None
    #: name -> (configuration, where it was read); None: the base's own configuration
    configs: dict[str, tuple[dict[str, Any], Location] | None] = field(default_factory=dict)
    changes: dict[str, Changes] = field(default_factory=dict)
    pool_template: str | None = None
    #: the pool as the Nodes a label selector matches (instead of one template node)
    pool_selector: LabelSelector | None = None
    pool_counts: list[int] = field(default_factory=list)
    replica_factors: list[float] = field(default_factory=list)
    arrival_rates: list[float] = field(default_factory=list)
    #: the base is a recorded history (``spec.base`` a mapping naming it) instead of a scenario
    history: HistorySource | None = None

    def variants(self, base_seed: int) -> list[Variant]:
        """The product of the axes, seeds varying fastest."""
        axes: list[list[Any]] = [list(self.configs) or [None], list(self.changes) or [None],
                                 list(self.pool_counts) or [None], list(self.replica_factors) or [None],
                                 list(self.arrival_rates) or [None]]
        seeds = self.seeds or [base_seed]
        return [Variant(seed, *point) for point in itertools.product(*axes) for seed in seeds]


class Checker:
    """Errors of one sweep (or plan) file, each naming its field; all of them are reported at once."""

    def __init__(self, file: str, kind: str = SWEEP_KIND) -> None:
        self.file = file
        self.kind = kind
        self.errors: list[ManifestError] = []

    def error(self, path: str, message: str) -> None:
        self.errors.append(ManifestError(message, file=self.file, document=1, path=path, object_ref=self.kind))

    def raise_any(self) -> None:
        if self.errors:
            first, *rest = self.errors
            raise ManifestError(first.message, file=first.file, document=first.document, path=first.path,
                                object_ref=first.object_ref, related=rest)


def read_document(path: str | Path, kind: str) -> dict[str, Any]:
    """The one document of a sweep or plan file, checked to be of ``kind`` with a ``spec`` mapping."""
    file = str(path)
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise ManifestError(f"cannot read file: {exc}", file=file) from exc
    docs = [obj for _, obj in yaml_documents(text, file) if obj is not None]
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise ManifestError(f"the file holds one {kind} document", file=file)
    doc: dict[str, Any] = docs[0]
    check = Checker(file, kind)
    if doc.get("apiVersion") != SWEEP_API_VERSION or doc.get("kind") != kind:
        check.error("kind", f"expected apiVersion {SWEEP_API_VERSION}, kind {kind}")
    elif not isinstance(doc.get("spec"), dict):
        check.error("spec", "a mapping is required")
    check.raise_any()
    return doc


def load_sweep(path: str | Path, base_given: bool = False) -> Sweep:
    """Read and check the sweep file at ``path`` (and what it names: the base is only checked to
    exist here; it is loaded by the caller, once). ``base_given``: the caller has the base from
    elsewhere (a live cluster), in place of the file's ``spec.base``, which may then be left out."""
    doc = read_document(path, SWEEP_KIND)
    spec = doc["spec"]
    check = Checker(str(path))
    for key in spec:
        if key not in _SPEC_FIELDS:
            check.error(f"spec.{key}", f"unknown field (fields: {', '.join(_SPEC_FIELDS)})")
    here = Path(path).parent
    sweep = common_fields(doc, Path(path), check, base_given)
    _configs(spec.get("schedulerConfigs"), here, sweep, check)
    for name, given in named(spec.get("changes"), "spec.changes", check).items():
        changes = parse_change_set(given, f"spec.changes.{name}", here, check.error)
        if changes is not None:
            sweep.changes[name] = changes
    _pool(spec.get("nodePool"), sweep, check)
    sweep.replica_factors = _numbers(spec.get("replicaFactor"), "spec.replicaFactor", check)
    sweep.arrival_rates = _numbers(spec.get("arrivalRate"), "spec.arrivalRate", check)
    refuse_history_axes(sweep, spec, check)
    check.raise_any()
    return sweep


def refuse_history_axes(sweep: Sweep, spec: dict[str, Any], check: Checker) -> None:
    """A history base goes without the axes that cannot apply to a replay (:data:`REFUSED_AXES`)."""
    if sweep.history is None:
        return
    for axis, why in REFUSED_AXES.items():
        if spec.get(axis) is not None:
            check.error(f"spec.{axis}", f"not with a history base: {why}")


def common_fields(doc: dict[str, Any], path: Path, check: Checker, base_given: bool = False) -> Sweep:
    """What a sweep and a plan file share: the name (``metadata.name``, else the file's stem), the
    base (relative to the file; not read when ``base_given``: the command line's live cluster
    replaces it), ``until`` and the seeds."""
    meta, spec = doc.get("metadata"), doc["spec"]
    given = meta.get("name") if isinstance(meta, dict) else None
    sweep = Sweep(name=given if isinstance(given, str) and given else path.stem, file=str(path), base_path="")
    if isinstance(spec.get("base"), dict):
        sweep.history = parse_history_source(spec["base"], path.parent, check.error)
        if base_given:
            check.error("spec.base", "a history base goes without --kubeconfig (a live cluster has no history)")
    elif not base_given:
        sweep.base_path = _base_path(spec.get("base"), path, check)
    if spec.get("until") is not None:
        try:
            sweep.until = parse_duration(spec["until"])
        except (ValueError, TypeError) as exc:
            check.error("spec.until", str(exc))
    sweep.seeds = parse_seeds(spec.get("seeds"), check)
    return sweep


def _base_path(base: Any, path: Path, check: Checker) -> str:
    """The base's path (relative to the file at ``path``), checked to be there ("" if it is not)."""
    if not isinstance(base, str) or not base:
        check.error("spec.base", "the scenario or snapshot to simulate (a path relative to this file) is required, "
                                 "or a history to replay ({history: PATH, ...}), or a live cluster given with "
                                 "--kubeconfig")
    elif not (path.parent / base).exists():
        check.error("spec.base", f"no such file or directory: {path.parent / base}")
    else:
        return str(path.parent / base)
    return ""


def parse_seeds(raw: Any, check: Checker) -> list[int] | None:
    if raw is None:
        return None
    if isinstance(raw, dict):
        first, count = raw.get("first", 0), raw.get("count", 0)
        if set(raw) - {"first", "count"} or not is_int(first) or not is_int(count) or count < 1 or first < 0:
            check.error("spec.seeds", "{first: N, count: M} with integers, N 0 or more (a seed), M at least 1")
            return None
        return list(range(first, first + count))
    if not isinstance(raw, list) or not raw:
        check.error("spec.seeds", "a list of integers or {first: N, count: M}")
        return None
    for i, seed in enumerate(raw):
        if not is_int(seed) or seed < 0:
            check.error(f"spec.seeds[{i}]", "a seed is an integer, 0 or more")
    if len(set(map(str, raw))) != len(raw):
        check.error("spec.seeds", "seeds repeat")
    return [int(s) for s in raw if is_int(s)]


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def named(raw: Any, path: str, check: Checker) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not raw:
        check.error(path, "a mapping of names to values")
        return {}
    for key in raw:
        if not isinstance(key, str) or not _NAME.match(key):
            check.error(f"{path}.{key}", "a name is letters, digits, '-', '_' or '.' (up to 63)")
    return raw


def _configs(raw: Any, here: Path, sweep: Sweep, check: Checker) -> None:
    for name, file in named(raw, "spec.schedulerConfigs", check).items():
        path = f"spec.schedulerConfigs.{name}"
        if file in ("", None):
            sweep.configs[name] = None
            continue
        if not isinstance(file, str):
            check.error(path, "a KubeSchedulerConfiguration file, or \"\" for the base's own configuration")
            continue
        try:
            config, location = read_scheduler_configuration(str(here / file))
            parse_configuration(config)
        except ManifestError as exc:
            check.error(path, str(exc))
            continue
        except ConfigError as exc:
            check.error(path, str(location.error(exc.message, exc.path)))
            continue
        sweep.configs[name] = (config, location)


def _pool(raw: Any, sweep: Sweep, check: Checker) -> None:
    if raw is None:
        return
    if not isinstance(raw, dict) or set(raw) - {"template", "selector"} != {"counts"}:
        check.error("spec.nodePool", "{template: NODE, counts: [N, ...]} or {selector: {matchLabels: ...}, counts: "
                                     "[N, ...]}: the node, or the nodes, of the pool and the pool's sizes")
        return
    if not pool_source(raw, sweep, check):
        return
    counts = raw["counts"]
    if not isinstance(counts, list) or not counts or not all(is_int(c) and c >= 1 for c in counts):
        check.error("spec.nodePool.counts", "a list of node counts, each 1 or more")
        return
    if not repeated(counts, "spec.nodePool.counts", check):
        sweep.pool_counts = list(counts)


def pool_source(raw: dict[str, Any], sweep: Sweep, check: Checker) -> bool:
    """The pool's ``template`` (a Node's name) or ``selector`` (a metav1.LabelSelector of Nodes):
    one of them, read into ``sweep``; False if neither is right."""
    if ("template" in raw) == ("selector" in raw):
        check.error("spec.nodePool", "either template (a Node's name) or selector (a label selector of Nodes)")
        return False
    if "template" in raw:
        if not isinstance(raw["template"], str) or not raw["template"]:
            check.error("spec.nodePool.template", "the name of a Node of the base")
            return False
        sweep.pool_template = raw["template"]
        return True
    try:
        selector = LabelSelector.from_dict(raw["selector"])
    except ValueError as exc:
        check.error("spec.nodePool.selector", str(exc))
        return False
    if selector.is_empty:
        check.error("spec.nodePool.selector", "matchLabels or matchExpressions: a selector of some of the Nodes")
        return False
    sweep.pool_selector = selector
    return True


def pool_nodes(objects: list[dict[str, Any]], sweep: Sweep) -> list[dict[str, Any]]:
    """The base's Nodes of the pool, in the base's order: the template node, or those the selector
    matches."""
    nodes = [o for o in objects if o["kind"] == "Node"]
    if sweep.pool_selector is not None:
        return [n for n in nodes if sweep.pool_selector.matches(n["metadata"].get("labels"))]
    return [n for n in nodes if n["metadata"]["name"] == sweep.pool_template]


def pool_description(sweep: Sweep) -> str:
    """How the pool is named to a reader: its template, or its selector's labels and expressions."""
    if sweep.pool_selector is None:
        return sweep.pool_template or ""
    selector = sweep.pool_selector
    parts = [f"{k}={v}" for k, v in selector.match_labels]
    parts += [f"{r.key} {r.operator} {','.join(r.values)}".strip() for r in selector.requirements]
    return ",".join(parts)


def _numbers(raw: Any, path: str, check: Checker) -> list[float]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not raw or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in raw):
        check.error(path, "a list of numbers above 0")
        return []
    if repeated([float(v) for v in raw], path, check):
        return []
    return [float(v) for v in raw]


def repeated(values: list[Any], path: str, check: Checker) -> bool:
    """Whether an axis repeats a value (two variants of one ID): told as an error naming the value."""
    seen: set[Any] = set()
    twice = []
    for value in values:
        if value in seen:
            twice.append(value)
        seen.add(value)
    if twice:
        check.error(path, f"{twice[0]:g} is given twice: each value makes one variant" if isinstance(twice[0], float)
                    else f"{twice[0]} is given twice: each value makes one variant")
    return bool(twice)


def check_against_base(sweep: Sweep, base: Scenario, kind: str = SWEEP_KIND) -> None:
    """What the axes name must be in the base (the pool's nodes, the drained and cordoned nodes,
    the classes): refused before any variant runs. ``kind``: the file's (a Sweep or a Plan)."""
    check = Checker(sweep.file, kind)
    pool = pool_nodes(base.objects, sweep)
    if sweep.pool_template is not None and not pool:
        check.error("spec.nodePool.template", f"no Node {sweep.pool_template!r} in the base")
    elif sweep.pool_selector is not None and not pool:
        check.error("spec.nodePool.selector", f"no Node of the base has {pool_description(sweep)}")
    for name, changes in sweep.changes.items():
        try:
            check_changes(base, changes)
        except WhatIfError as exc:
            check.error(f"spec.changes.{name}", str(exc))
    check.raise_any()
