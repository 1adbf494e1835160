"""Scheduler extenders: webhooks that filter, score, pick preemption victims and bind (upstream
``pkg/scheduler/extender.go`` and ``k8s.io/kube-scheduler/extender/v1``).

An extender is configured in KubeSchedulerConfiguration ``extenders``. The scheduler POSTs JSON to
``<urlPrefix>/<verb>`` in upstream's wire types, whose field names are the Go struct names
(``Pod``, ``Nodes``, ``NodeNames``, ``FailedNodes``, ...); answers are read case-insensitively, as
Go's JSON decoder does. Two transports carry the calls:

- HTTP(S) to a real server (``http://`` / ``https://`` URL prefixes), with the configured timeout
  and TLS settings;
- a Python callable in this process (``python:<module or file.py>:<function>``), called as
  ``function(verb, args) -> result`` with the same JSON documents, for offline simulations.

Here: one extender's configuration, its calls and how their answers are read. What a scheduling
cycle asks of all the extenders together at each point is in
:mod:`~kubesched.scheduler.framework.extenders`; the transports are in
:mod:`~kubesched.scheduler.framework.extender_transport`.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubesched.k8s.objects import Obj
from kubesched.scheduler.framework.types import NodeInfo, PodInfo

#: upstream ``extenderv1.MaxExtenderPriority``: extenders score nodes on 0..10
MAX_EXTENDER_PRIORITY = 10
#: the name put in a pod's unschedulable plugins when an extender filtered nodes out (upstream
#: ``framework.ExtenderName``)
EXTENDER_NAME = "Extender"


class ExtenderError(Exception):
    """A failed extender call; ``str()`` is upstream's error text."""


@dataclass(frozen=True)
class TLSSettings:
    """``tlsConfig`` of an extender (upstream ``ExtenderTLSConfig``); the ``*Data`` fields are PEM
    bytes, base64 in YAML/JSON as Go's ``[]byte``."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""


@dataclass(frozen=True)
class ExtenderConfig:
    """One entry of KubeSchedulerConfiguration ``extenders``."""

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    enable_https: bool = False
    tls: TLSSettings | None = None
    http_timeout: float = 0.0
    node_cache_capable: bool = False
    #: ``(name, ignoredByScheduler)`` of each managed extended resource
    managed_resources: tuple[tuple[str, bool], ...] = ()
    ignorable: bool = False


#: how a call reaches the extender: ``(verb, url, JSON document) -> decoded answer``
class Transport(Protocol):
    def __call__(self, verb: str, url: str, args: Obj) -> Any: ...


class Extender:
    """Upstream ``HTTPExtender``: the calls the scheduler makes, each raising
    :class:`ExtenderError` when it fails."""

    def __init__(self, config: ExtenderConfig, transport: Transport,
                 apply_binding: Callable[[Obj, str], None] | None = None) -> None:
        self.config = config
        self.name = config.url_prefix
        self.weight = config.weight
        self.ignorable = config.ignorable
        self._send = transport
        self._managed = {name for name, _ in config.managed_resources}
        #: in a simulation: records the binding an extender accepted, as the extender itself would
        #: against a real API server
        self._apply_binding = apply_binding

    def __repr__(self) -> str:
        return f"Extender({self.name!r})"

    def close(self) -> None:
        """Let go of what the transport keeps open between calls (connections to the extender)."""
        close = getattr(self._send, "close", None)
        if close is not None:
            close()

    @property
    def supports_preemption(self) -> bool:
        return bool(self.config.preempt_verb)

    @property
    def is_binder(self) -> bool:
        return bool(self.config.bind_verb)

    def is_interested(self, pod: PodInfo) -> bool:
        """Every pod, unless ``managedResources`` are listed: then only a pod whose containers or
        init containers request or limit one of them."""
        if not self._managed:
            return True
        spec = pod.spec
        for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            resources = container.get("resources") or {}
            for section in ("requests", "limits"):
                if any(name in self._managed for name in resources.get(section) or ()):
                    return True
        return False

    def _url(self, verb: str) -> str:
        return self.config.url_prefix.rstrip("/") + "/" + verb

    def _args(self, pod: PodInfo, nodes: list[NodeInfo]) -> Obj:
        if self.config.node_cache_capable:
            return {"Pod": pod.obj, "Nodes": None, "NodeNames": [n.name for n in nodes]}
        items = [n.node for n in nodes]
        return {"Pod": pod.obj, "Nodes": {"metadata": {}, "items": items}, "NodeNames": None}

    def filter(self, pod: PodInfo, nodes: list[NodeInfo]) -> tuple[list[str], dict[str, str], dict[str, str]]:
        """The names of the nodes that pass (a subset of ``nodes``), the failed nodes and the nodes
        failed as unresolvable, each with the extender's reason."""
        if not self.config.filter_verb:
            return [n.name for n in nodes], {}, {}
        result = self._call(self.config.filter_verb, self._args(pod, nodes))
        error = _field(result, "Error")
        if error:
            raise ExtenderError(str(error))
        names = _field(result, "NodeNames")
        listed = _field(result, "Nodes")
        passed: list[str] = []
        if self.config.node_cache_capable and names is not None:
            given = {n.name for n in nodes}
            for name in _list(names, "NodeNames"):
                if name not in given:
                    raise ExtenderError(
                        f'extender "{self.name}" claims a filtered node "{name}" which is not found in the '
                        "input node list")
                passed.append(name)
        elif listed is not None:
            for item in _list(_field(listed, "Items") or [], "Nodes.items"):
                passed.append(str(_field(_field(item, "Metadata") or {}, "Name") or ""))
        return passed, _reasons(result, "FailedNodes"), _reasons(result, "FailedAndUnresolvableNodes")

    def prioritize(self, pod: PodInfo, nodes: list[NodeInfo]) -> list[tuple[str, int]]:
        """``(host, score)`` pairs on the extender's 0..10 scale, unweighted."""
        if not self.config.prioritize_verb:
            return [(n.name, 0) for n in nodes]
        result = self._call(self.config.prioritize_verb, self._args(pod, nodes))
        scores: list[tuple[str, int]] = []
        for entry in _list(result or [], "HostPriorityList"):
            score = _field(entry, "Score") or 0
            if not isinstance(score, int) or isinstance(score, bool):
                raise ExtenderError(f"extender {self.name}: score {score!r} is not an integer")
            scores.append((str(_field(entry, "Host") or ""), score))
        return scores

    def process_preemption(
        self, pod: PodInfo, victims: Mapping[str, tuple[list[PodInfo], int]],
        node_info: Callable[[str], NodeInfo | None],
    ) -> dict[str, tuple[list[PodInfo], int]]:
        """The candidates the extender keeps, ``node -> (victims, PDB violations)``; its answer names
        victims by UID, each of which must be a pod on that node."""
        if self.config.node_cache_capable:
            meta = {node: {"Pods": [{"UID": p.uid} for p in pods], "NumPDBViolations": n}
                    for node, (pods, n) in victims.items()}
            args: Obj = {"Pod": pod.obj, "NodeNameToVictims": None, "NodeNameToMetaVictims": meta}
        else:
            full = {node: {"Pods": [p.obj for p in pods], "NumPDBViolations": n}
                    for node, (pods, n) in victims.items()}
            args = {"Pod": pod.obj, "NodeNameToVictims": full, "NodeNameToMetaVictims": None}
        result = self._call(self.config.preempt_verb, args)
        answer = _field(result, "NodeNameToMetaVictims") or {}
        if not isinstance(answer, dict):
            raise ExtenderError(f"extender {self.name}: NodeNameToMetaVictims is not an object")
        kept: dict[str, tuple[list[PodInfo], int]] = {}
        for node_name, meta_victims in answer.items():
            info = node_info(node_name)
            if info is None:
                raise ExtenderError(f'nodeinfo not found for node name "{node_name}"')
            meta_victims = meta_victims or {}
            pods: list[PodInfo] = []
            for meta_pod in _list(_field(meta_victims, "Pods") or [], "Pods"):
                uid = str(_field(meta_pod, "UID") or "")
                found = next((p for p in info.pods if p.uid == uid), None)
                if found is None:
                    raise ExtenderError(
                        f"extender: {self.name} claims to preempt pod (UID: &{{{uid}}}) on node: {node_name}, "
                        "but the pod is not found on that node")
                pods.append(found)
            kept[node_name] = (pods, int(_field(meta_victims, "NumPDBViolations") or 0))
        return kept

    def bind(self, pod: PodInfo, node_name: str) -> None:
        """Delegate the binding; the extender is to POST it to the API server."""
        args = {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": node_name}
        result = self._call(self.config.bind_verb, args)
        error = _field(result, "Error")
        if error:
            raise ExtenderError(str(error))
        if self._apply_binding is not None:
            self._apply_binding(pod.obj, node_name)

    def _call(self, verb: str, args: Obj) -> Any:
        return self._send(verb, self._url(verb), args)


def _field(obj: Any, name: str) -> Any:
    """A field of a decoded answer, matched as Go's decoder does: exactly, else ignoring case."""
    if not isinstance(obj, dict):
        return None
    if name in obj:
        return obj[name]
    lowered = name.lower()
    return next((v for k, v in obj.items() if isinstance(k, str) and k.lower() == lowered), None)


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ExtenderError(f"json: cannot unmarshal {type(value).__name__} into {what}")
    return value


def _reasons(result: Any, name: str) -> dict[str, str]:
    value = _field(result, name) or {}
    if not isinstance(value, dict):
        raise ExtenderError(f"json: cannot unmarshal {type(value).__name__} into {name}")
    return {str(k): str(v) for k, v in value.items()}


def decode_pem_data(value: Any) -> bytes:
    """A ``[]byte`` field of the configuration: base64 in YAML/JSON (as Go encodes it)."""
    if not value:
        return b""
    if not isinstance(value, str):
        raise ValueError("must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except ValueError as err:
        raise ValueError(f"not base64: {err}") from err
