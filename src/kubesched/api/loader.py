"""Loading manifests and scenario files.

Everything is read and validated before anything is returned: a malformed input raises
:class:`ManifestError` (all problems found, the first in the message) and nothing is applied.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesched.api.durations import parse_duration
from kubesched.api.errors import Location, ManifestError, ManifestNotice
from kubesched.api.known_fields import unknown_fields
from kubesched.api.list_stream import read_list_items
from kubesched.api.manifest_text import json_document, json_lines, yaml_documents
from kubesched.api.racing import SchedulerSpec, load_schedulers, refuse_with_configuration
from kubesched.api.resources import default_pod_requests_from_limits
from kubesched.api.snapshot import forget_managed_fields, is_existing
from kubesched.api.validation import (
    SCENARIO_KIND,
    SCHEDULER_CONFIGURATION_KIND,
    WORKLOAD_KINDS,
    object_ref,
    validate_object,
)
from kubesched.des.heap import collector_paused
from kubesched.k8s.kinds import MANIFEST_KINDS, is_namespaced
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import DEFAULT_NAMESPACE

#: JSON Lines: one object per line (a List's items, as ``jq -c '.items[]'`` writes them)
JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json", *JSON_LINES_SUFFIXES)
#: the path that means standard input (read as YAML, which includes JSON), named ``STDIN_NAME`` in messages
STDIN = "-"
STDIN_NAME = "<stdin>"

@dataclass
class Step:
    """One scenario step. ``action`` is ``"create"`` (``obj`` set, defaulted like an initial object),
    ``"drain"`` (a node, as kubectl drain), ``"delete"`` or ``"patch"`` (``kind``/``name``/``namespace`` set; ``merge`` for patch, a JSON merge
    patch).  ``kind``, ``name`` and ``namespace`` are filled for every action; ``namespace`` is ``""``
    for cluster-scoped kinds.  ``source`` is e.g. ``"file.yaml: document 4, spec.steps[2]"``."""

    at: float
    action: str
    obj: dict[str, Any] | None = None
    kind: str | None = None
    name: str | None = None
    namespace: str = ""
    merge: dict[str, Any] | None = None
    grace_period_seconds: int | None = None
    source: str = ""
    #: ``"drain"``: kubectl drain's flags (``force``, ``ignoreDaemonSets``, ``deleteEmptyDirData``,
    #: ``gracePeriodSeconds``, ``timeout``); ``name`` is the node
    drain: dict[str, Any] | None = None


@dataclass
class Scenario:
    """A loaded scenario: the initial ``objects`` in file order (``sources`` parallel to them),
    ``steps`` sorted stably by ``at``."""

    name: str
    seed: int = 0
    until: float | None = None
    scheduler_configuration: dict[str, Any] | None = None
    #: where the configuration was read, for errors found in it when the scheduler is built (None:
    #: a Scenario's ``spec.schedulerConfiguration`` of no file); a text is a caller's own words
    scheduler_configuration_source: Location | str | None = None
    #: the directory of the file the configuration came from (``python:`` extender files are found
    #: from there); None: the working directory
    scheduler_configuration_dir: str | None = None
    objects: list[dict[str, Any]] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    #: ``spec.cluster``: settings of the embedded cluster's subsystems (admission, eviction, ...)
    cluster: dict[str, Any] = field(default_factory=dict)
    #: ``spec.schedulers``: several schedulers racing against the cluster (empty: the one scheduler
    #: of ``scheduler_configuration``)
    schedulers: list[SchedulerSpec] = field(default_factory=list)
    #: fields the objects' kinds do not declare, one warning each (an error with :func:`strict_error`),
    #: and notices (:class:`ManifestNotice`, never an error) such as pods bound to missing nodes
    warnings: list[ManifestError] = field(default_factory=list)


@dataclass
class _Doc:
    obj: Any
    file: str
    document: int
    item: int | None = None  # index in a ``kind: List`` document
    #: the paths of its unknown fields, when looked for as it was read (None: not yet). The walk
    #: that finds them also shares the object's repeated texts (see known_fields), and right after
    #: an item is parsed the duplicates it lets go make room for the next item's
    unknown: list[str] | None = None

    @property
    def source(self) -> str:
        text = f"{self.file}: document {self.document}"
        return text if self.item is None else f"{text}, items[{self.item}]"

    @property
    def path_prefix(self) -> str:
        return "" if self.item is None else f"items[{self.item}]"


def _files_of(path: Path) -> list[Path]:
    if str(path) == STDIN:
        return [path]
    if path.is_dir():
        return sorted(
            (p for p in path.iterdir() if p.is_file() and p.suffix.lower() in MANIFEST_SUFFIXES),
            key=lambda p: p.name,
        )
    if not path.exists():
        raise ManifestError("no such file or directory", file=str(path))
    return [path]


def _read_file(path: Path) -> list[_Doc]:
    """The objects of one file (a List's items each a document of its own), ``managedFields`` dropped
    as each is read. A List laid out as kubectl writes it is read item by item."""
    stdin = str(path) == STDIN
    file = STDIN_NAME if stdin else str(path)
    suffix = path.suffix.lower()
    try:
        if not stdin and suffix not in JSON_LINES_SUFFIXES:
            unknown: list[list[str]] = []

            def tidy(item: Any) -> None:  # see _Doc.unknown
                forget_managed_fields(item)
                unknown.append(unknown_fields(item, f"items[{len(unknown)}]"))

            listed = read_list_items(path, tidy, skip_managed_fields=True)
            if listed is not None:
                return [_Doc(item, file, 1, i, unknown[i]) for i, item in enumerate(listed[0])]
        data = _standard_input() if stdin else path.read_bytes()
        if suffix in JSON_LINES_SUFFIXES:
            return [_Doc(obj, file, number, unknown=unknown_fields(_forgetting(obj)))
                    for number, obj in json_lines(data, file) if obj is not None]
        raw = _json_input(data) if stdin and data.lstrip()[:1] == b"{" else None
        if suffix == ".json":
            raw = [(1, json_document(data, file))]
        elif raw is None:
            raw = yaml_documents(data, file)
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"cannot read file: {exc}", file=file) from exc
    out: list[_Doc] = []
    for number, obj in raw:
        if obj is None:
            continue  # empty document
        if isinstance(obj, dict) and obj.get("kind") == "List":
            items = obj.get("items")
            if not isinstance(items, list):
                raise ManifestError("a List needs an `items` list", file=file, document=number, path="items")
            out.extend(_Doc(_forgetting(item), file, number, i) for i, item in enumerate(items))
        else:
            out.append(_Doc(_forgetting(obj), file, number))
    return out


def _forgetting(obj: Any) -> Any:
    forget_managed_fields(obj)
    return obj


def _standard_input() -> bytes:
    stream = getattr(sys.stdin, "buffer", None)
    return stream.read() if stream is not None else sys.stdin.read().encode("utf-8")


def _json_input(data: bytes) -> list[tuple[int, Any]] | None:
    """Standard input as one JSON document (``kubectl get -o json | kubesched ...``); None when it
    is not one: it is read as YAML then, which JSON with a syntax error is too, and whose reader
    names the error."""
    try:
        return [(1, json_document(data, STDIN_NAME))]
    except ManifestError:
        return None


def _read(paths: list[Path]) -> list[_Doc]:
    docs: list[_Doc] = []
    for path in paths:
        for file in _files_of(Path(path)):
            docs.extend(_read_file(file))
    return docs


@dataclass
class _Findings:
    """What checking each document found: validation errors ``(path, message)`` and the paths of
    unknown fields, one list per document."""

    errors: list[list[tuple[str, str]]]
    unknown: list[list[str]]


def _find(docs: list[_Doc]) -> _Findings:
    return _Findings([list(validate_object(d.obj, d.path_prefix)) for d in docs],
                     [unknown_fields(d.obj, d.path_prefix) if d.unknown is None else d.unknown for d in docs])


def _validate(docs: list[_Doc], findings: _Findings | None = None) -> None:
    findings = findings or _find(docs)
    errors: list[ManifestError] = []
    seen = {SCENARIO_KIND: 0, SCHEDULER_CONFIGURATION_KIND: 0}
    for doc, found in zip(docs, findings.errors):
        for path, message in found:
            errors.append(ManifestError(message, file=doc.file, document=doc.document, path=path,
                                        object_ref=object_ref(doc.obj) or None))
        kind = doc.obj.get("kind") if isinstance(doc.obj, dict) else None
        if kind in seen:
            seen[kind] += 1
            if doc.item is not None:
                errors.append(ManifestError(f"a {kind} cannot be an item of a List", file=doc.file,
                                            document=doc.document, path=doc.path_prefix, object_ref=kind))
            elif seen[kind] > 1:
                errors.append(ManifestError(f"more than one {kind} document", file=doc.file,
                                            document=doc.document, object_ref=object_ref(doc.obj) or None))
    if errors:
        first, *rest = errors
        raise ManifestError(first.message, file=first.file, document=first.document, path=first.path,
                            object_ref=first.object_ref, related=rest)


def _without_unsimulated(docs: list[_Doc]) -> tuple[list[_Doc], list[ManifestError]]:
    """Objects read from a cluster (they carry a uid) of kinds kubesched does not simulate (a
    CronJob or HorizontalPodAutoscaler of ``kubectl get all``) are left out with one warning per
    kind; hand-written objects of such kinds stay, and are refused by validation."""
    kept: list[_Doc] = []
    left_out: dict[str, list[_Doc]] = {}
    for doc in docs:
        obj = doc.obj
        kind = obj.get("kind") if isinstance(obj, dict) else None
        if isinstance(kind, str) and kind not in MANIFEST_KINDS and kind not in (SCENARIO_KIND, SCHEDULER_CONFIGURATION_KIND) \
                and is_existing(obj):
            left_out.setdefault(kind, []).append(doc)
        else:
            kept.append(doc)
    warnings = [ManifestError(f"kind {kind} is not simulated: {len(group)} object(s) read from a cluster left out",
                              file=group[0].file, document=group[0].document, object_ref=object_ref(group[0].obj) or None)
                for kind, group in sorted(left_out.items())]
    return kept, warnings


def _unknown_field_warnings(docs: list[_Doc], findings: _Findings) -> list[ManifestError]:
    return [ManifestError(f'unknown field "{path}"', file=doc.file, document=doc.document,
                          object_ref=object_ref(doc.obj) or None)
            for doc, found in zip(docs, findings.unknown) for path in found]


def _pods_on_missing_nodes(docs: list[_Doc]) -> list[ManifestError]:
    """A notice for each pod bound (``spec.nodeName``) to a node that the scenario never has, neither
    among its objects nor created by a step. The API server accepts such a pod; no scheduler sees it
    pending (it is bound), no kubelet runs it, and the pod garbage collector deletes it once the node
    has been missing for 40 s (``cluster/embedded/controllers/podgc.py``, as upstream's
    ``gcOrphaned``), after which its controller, if it has one, replaces it. That is simulated as it
    is; the notice says why such a pod never runs: in a hand-written scenario a misspelt node name,
    in a dump a node deleted just before it was taken."""
    nodes: set[str] = set()
    bound: list[tuple[_Doc, str | None, dict[str, Any]]] = []  # path None: the document's own object
    for doc in docs:
        kind = doc.obj.get("kind")
        if kind == "Node":
            nodes.add(doc.obj["metadata"]["name"])
        elif kind == "Pod":
            if (doc.obj.get("spec") or {}).get("nodeName"):
                bound.append((doc, None, doc.obj))
        elif kind == SCENARIO_KIND:
            for path, obj in _objects_of(doc):
                if obj.get("kind") == "Node":
                    nodes.add(obj["metadata"]["name"])
                elif obj.get("kind") == "Pod" and (obj.get("spec") or {}).get("nodeName"):
                    bound.append((doc, path, obj))
    return [ManifestNotice(f'node "{pod["spec"]["nodeName"]}" does not exist: the pod is bound to it, so no '
                           "scheduler places it, and the pod garbage collector deletes it once the node has "
                           "been missing for 40 s", file=doc.file, document=doc.document,
                           path=_below(doc.path_prefix if path is None else path, "spec.nodeName"),
                           object_ref=object_ref(pod))
            for doc, path, pod in bound if pod["spec"]["nodeName"] not in nodes]


def _below(path: str, field: str) -> str:
    return f"{path}.{field}" if path else field


def _objects_of(doc: _Doc) -> list[tuple[str, dict[str, Any]]]:
    """The objects a (valid) document brings, each with its path in the document: its own, or a
    Scenario's that its steps create."""
    obj = doc.obj
    if obj.get("kind") != SCENARIO_KIND:
        return [(doc.path_prefix, obj)]
    steps = (obj.get("spec") or {}).get("steps") or []
    return [(f"spec.steps[{i}].create", step["create"]) for i, step in enumerate(steps) if "create" in step]


def strict_error(warnings: list[ManifestError]) -> ManifestError | None:
    """The unknown-field warnings as one error (all of them listed), for ``--strict``; None if none.
    Notices (:class:`ManifestNotice`) are left out: they are about input Kubernetes accepts."""
    warnings = [w for w in warnings if not isinstance(w, ManifestNotice)]
    if not warnings:
        return None
    first, *rest = warnings
    return ManifestError(first.message, file=first.file, document=first.document, object_ref=first.object_ref,
                         related=rest)


def default_object(obj: dict[str, Any]) -> dict[str, Any]:
    """A defaulted deep copy of a (valid) object: ``metadata.namespace`` = ``default`` for namespaced
    kinds; container requests defaulted from limits for Pods and workload pod templates."""
    return _defaulted(deep_copy(obj))


def _defaulted(out: dict[str, Any]) -> dict[str, Any]:
    """``out`` defaulted in place (see :func:`default_object`): for objects the loader has just read,
    which nothing else holds."""
    kind = out.get("kind", "")
    meta = out.setdefault("metadata", {})
    if is_namespaced(kind) and kind != SCENARIO_KIND and not meta.get("namespace"):
        meta["namespace"] = DEFAULT_NAMESPACE
    if kind == "Pod":
        default_pod_requests_from_limits(out)
    elif kind in WORKLOAD_KINDS:
        template = (out.get("spec") or {}).get("template")
        if isinstance(template, dict):
            default_pod_requests_from_limits(template)
    return out


@collector_paused()
def load_manifests(paths: list[Path], warnings: list[ManifestError] | None = None) -> list[tuple[dict[str, Any], str]]:
    """Every object of the given files/directories (``-``: standard input) as ``(defaulted object,
    source)`` pairs in order, ``source`` being ``"file.yaml: document N"`` (``", items[i]"`` appended
    for List items).  Scenario and KubeSchedulerConfiguration documents are included as they are.
    Raises ManifestError if anything is malformed; unknown fields are appended to ``warnings``."""
    docs, ignored = _without_unsimulated(_read(list(paths)))
    findings = _find(docs)
    _validate(docs, findings)
    if warnings is not None:
        warnings.extend(ignored)
        warnings.extend(_unknown_field_warnings(docs, findings))
    return [(_defaulted(d.obj), d.source) for d in docs]


def load_scheduler_configuration(path: str) -> dict[str, Any]:
    """A KubeSchedulerConfiguration file (``-``: standard input): exactly one document, of that kind,
    without unknown fields.  Raises ManifestError naming the file."""
    return read_scheduler_configuration(path)[0]


def read_scheduler_configuration(path: str) -> tuple[dict[str, Any], Location]:
    """:func:`load_scheduler_configuration`, and where the configuration was read (for the errors
    that building a scheduler from it finds)."""
    docs = _read([Path(path)])
    file = STDIN_NAME if path == STDIN else path
    if not docs:
        raise ManifestError(f"expected a {SCHEDULER_CONFIGURATION_KIND} document, found none", file=file)
    if len(docs) != 1 or docs[0].item is not None:
        raise ManifestError(f"expected a single document, a {SCHEDULER_CONFIGURATION_KIND}; found {len(docs)} objects",
                            file=file)
    obj = docs[0].obj
    if not isinstance(obj, dict) or obj.get("kind") != SCHEDULER_CONFIGURATION_KIND:
        raise ManifestError(f"expected a {SCHEDULER_CONFIGURATION_KIND} document", file=file, document=docs[0].document,
                            object_ref=object_ref(obj) or None)
    _validate(docs)
    return copy.deepcopy(obj), _location(docs[0])


def _step(raw: dict[str, Any], source: str) -> Step:
    at = parse_duration(raw["at"])
    if "create" in raw:
        obj = _defaulted(raw["create"])
        meta = obj["metadata"]
        return Step(at=at, action="create", obj=obj, kind=obj["kind"], name=meta["name"],
                    namespace=meta.get("namespace", "") if is_namespaced(obj["kind"]) else "", source=source)
    if "drain" in raw:
        flags = {k: v for k, v in raw["drain"].items() if k != "node"}
        return Step(at=at, action="drain", kind="Node", name=raw["drain"]["node"], drain=flags, source=source)
    action = "delete" if "delete" in raw else "patch"
    target = raw[action]
    kind = target["kind"]
    namespace = (target.get("namespace") or DEFAULT_NAMESPACE) if is_namespaced(kind) else ""
    return Step(
        at=at,
        action=action,
        kind=kind,
        name=target["name"],
        namespace=namespace,
        merge=copy.deepcopy(target.get("merge")) if action == "patch" else None,
        grace_period_seconds=target.get("gracePeriodSeconds") if action == "delete" else None,
        source=source,
    )


@collector_paused()
def load_scenario(path: str | Path) -> Scenario:
    """Load a scenario file or directory (read in name order; ``-``: standard input).  The Scenario
    document is optional; without one the scenario is just the initial objects.  Its name defaults
    to the file or directory stem.  A KubeSchedulerConfiguration document is the scenario's
    configuration.  Raises ManifestError if anything is malformed; fields that the objects' kinds do
    not declare are listed in the Scenario's ``warnings``."""
    p = Path(path)
    stdin = str(p) == STDIN
    docs = _read([p])
    if not docs:
        what = "directory has no YAML or JSON file with" if p.is_dir() else "input has" if stdin else "file has"
        raise ManifestError(f"nothing to simulate: the {what} no Kubernetes object or Scenario",
                            file=STDIN_NAME if stdin else str(p))
    docs, ignored = _without_unsimulated(docs)
    findings = _find(docs)
    _validate(docs, findings)
    if all(d.obj.get("kind") == SCHEDULER_CONFIGURATION_KIND for d in docs):
        raise ManifestError(f"nothing to simulate: only a {SCHEDULER_CONFIGURATION_KIND}; give it with "
                            "--scheduler-config, or beside the objects of a scenario",
                            file=STDIN_NAME if stdin else str(p))
    scenario = Scenario(name="stdin" if stdin else p.stem if p.is_file() else p.name,
                        warnings=ignored + _unknown_field_warnings(docs, findings) + _pods_on_missing_nodes(docs))
    _take_scheduler_configuration(scenario, docs)
    for doc in docs:
        obj = doc.obj
        if obj.get("kind") == SCHEDULER_CONFIGURATION_KIND:
            continue
        if obj.get("kind") != SCENARIO_KIND:
            scenario.objects.append(_defaulted(obj))
            scenario.sources.append(doc.source)
            continue
        name = (obj.get("metadata") or {}).get("name")
        if name:
            scenario.name = name
        spec = obj.get("spec") or {}
        scenario.seed = spec.get("seed") or 0
        if spec.get("until") is not None:
            scenario.until = parse_duration(spec["until"])
        scenario.cluster = copy.deepcopy(spec.get("cluster") or {})
        if spec.get("schedulerConfiguration") is not None:
            scenario.scheduler_configuration = copy.deepcopy(spec["schedulerConfiguration"])
            scenario.scheduler_configuration_source = _location(doc, "spec.schedulerConfiguration")
            scenario.scheduler_configuration_dir = _directory_of(doc.file)
        if spec.get("schedulers") is not None:
            where = _location(doc, "spec.schedulers")
            if scenario.scheduler_configuration is not None:  # a KubeSchedulerConfiguration document
                raise refuse_with_configuration(where, f"a {SCHEDULER_CONFIGURATION_KIND} document")
            scenario.schedulers = load_schedulers(spec["schedulers"], where, _directory_of(doc.file),
                                                  read_scheduler_configuration)
        steps = [_step(raw, f"{doc.source}, spec.steps[{i}]") for i, raw in enumerate(spec.get("steps") or [])]
        scenario.steps = sorted(steps, key=lambda s: s.at)
    return scenario


def _take_scheduler_configuration(scenario: Scenario, docs: list[_Doc]) -> None:
    """A KubeSchedulerConfiguration document, if there is one, configures the scenario's scheduler;
    a Scenario that has its own ``spec.schedulerConfiguration`` too is refused (which one?)."""
    config = next((d for d in docs if d.obj.get("kind") == SCHEDULER_CONFIGURATION_KIND), None)
    if config is None:
        return
    other = next((d for d in docs if d.obj.get("kind") == SCENARIO_KIND
                  and (d.obj.get("spec") or {}).get("schedulerConfiguration") is not None), None)
    if other is not None:
        raise ManifestError(f"two scheduler configurations: this document and {other.source}, "
                            "spec.schedulerConfiguration; keep one", file=config.file, document=config.document,
                            object_ref=SCHEDULER_CONFIGURATION_KIND)
    scenario.scheduler_configuration = copy.deepcopy(config.obj)
    scenario.scheduler_configuration_source = _location(config)
    scenario.scheduler_configuration_dir = _directory_of(config.file)


def _location(doc: _Doc, path: str = "") -> Location:
    """Where the field at ``path`` of a document's object was read."""
    return Location(doc.file, doc.document, doc.path_prefix, object_ref(doc.obj) or None).below(path)


def _directory_of(file: str) -> str | None:
    """The directory of a file documents were read from (None for standard input)."""
    return None if file == STDIN_NAME else str(Path(file).parent)


@collector_paused()
def scenario_from_objects(objects: list[dict[str, Any]], name: str, source: str) -> Scenario:
    """A scenario of the given objects (e.g. read from a live cluster), validated like a file whose
    documents they are (``source`` names it in errors)."""
    docs = [_Doc(obj, source, i + 1) for i, obj in enumerate(objects)]
    _validate(docs)
    return Scenario(name=name, objects=[_defaulted(d.obj) for d in docs], sources=[d.source for d in docs],
                    warnings=_pods_on_missing_nodes(docs))
