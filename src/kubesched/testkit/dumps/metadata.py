"""What every object of a dump carries, as the API server stores it: ``creationTimestamp`` (all
before :data:`TAKEN_AT`), a ``uid`` and names derived from what the object is (so a dump is the same
at every run), a ``resourceVersion`` in creation order and ``managedFields`` entries (the
``fieldsV1`` set of what each manager wrote). :class:`DumpBase` holds a dump's objects by kind and
gives each new one its metadata; the builders of the other modules of this package extend it.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from kubesched.k8s.objects import Obj

#: when the dump is "taken" (every timestamp is before it)
TAKEN_AT = datetime(2026, 11, 20, 9, 30, 0, tzinfo=UTC)
#: list fields whose items managedFields names by key (``k:{"name":"app"}``); other lists are atomic
_MERGE_KEYS = {"containers": ("name",), "initContainers": ("name",), "volumes": ("name",),
               "volumeMounts": ("mountPath",), "ports": ("containerPort", "protocol"), "env": ("name",),
               "conditions": ("type",), "ownerReferences": ("uid",), "podIPs": ("ip",), "hostIPs": ("ip",)}
#: fields whose managedFields entry lists the children only (no ``.``)
_BARE_FIELDS = frozenset({"metadata", "spec", "status", "template"})


@functools.lru_cache(maxsize=1 << 16)
def timestamp(minutes_before: float) -> str:
    """The API server's timestamp ``minutes_before`` the dump was taken."""
    return (TAKEN_AT - timedelta(minutes=minutes_before)).strftime("%Y-%m-%dT%H:%M:%SZ")


def object_uid(*parts: str) -> str:
    """A version 4 UUID made of ``parts`` (the same at every run)."""
    h = hashlib.sha1("/".join(parts).encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def name_hash(*parts: str) -> str:
    """10 characters of the alphabet controllers name objects with (``pod-template-hash``, name
    suffixes), made of ``parts``."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    h = int(hashlib.sha1("/".join(parts).encode()).hexdigest(), 16)
    out = ""
    for _ in range(10):
        h, r = divmod(h, len(alphabet))
        out += alphabet[r]
    return out


def _managed(manager: str, operation: str, minutes_before: float, api_version: str = "v1") -> list[Obj]:
    return [{"apiVersion": api_version, "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {}}},
             "manager": manager, "operation": operation, "time": timestamp(minutes_before)}]


def fields_v1(obj: Obj) -> Obj:
    """The ``fieldsV1`` set of every field in ``obj``, as a managedFields entry lists what its manager
    set: ``f:name`` per field, ``k:{...}`` per keyed list item, ``.`` for a map owned as a whole."""
    out: Obj = {}
    for key, value in obj.items():
        if isinstance(value, dict) and value:
            inner = fields_v1(value)
            out[f"f:{key}"] = inner if key in _BARE_FIELDS else {".": {}, **inner}
        elif isinstance(value, list) and value and key in _MERGE_KEYS and all(isinstance(v, dict) for v in value):
            names = _MERGE_KEYS[key]
            out[f"f:{key}"] = {"k:" + json.dumps({n: item.get(n) for n in names}, separators=(",", ":")):
                               {".": {}, **fields_v1(item)} for item in value}
        else:
            out[f"f:{key}"] = {}
    return out


def managed_entry(manager: str, fields: Obj, minutes_before: float, subresource: str | None = None) -> Obj:
    """The managedFields entry of an Update by ``manager`` (of ``subresource``, e.g. ``status``)
    that set ``fields`` (a :func:`fields_v1` set)."""
    entry: Obj = {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields, "manager": manager,
                  "operation": "Update"}
    if subresource:
        entry["subresource"] = subresource
    entry["time"] = timestamp(minutes_before)
    return entry


@dataclass
class DumpBase:
    """A dump's objects by kind (each list in the order its objects were made until
    :meth:`~kubesched.testkit.dumps.cluster.ClusterDump.sort`), and the metadata of new ones."""

    nodes: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    pdbs: list[Obj] = field(default_factory=list)
    classes: list[Obj] = field(default_factory=list)
    quotas: list[Obj] = field(default_factory=list)
    workloads: list[Obj] = field(default_factory=list)  # deploy, rs, sts, ds in kubectl's order
    storage: list[Obj] = field(default_factory=list)  # sc, pv, pvc (appended to the command when present)
    _rv: int = 1000
    #: per node: its InternalIP, its pod CIDR's first address and the pod IPs handed out so far
    _network: dict[str, list[Any]] = field(default_factory=dict)

    def _meta(self, name: str, *, namespace: str | None = None, minutes_before: float = 600,
              labels: dict[str, str] | None = None, manager: str = "kubectl-client-side-apply",
              api_version: str = "v1", kind: str = "") -> Obj:
        self._rv += 7
        meta: Obj = {"creationTimestamp": timestamp(minutes_before)}
        if labels:
            meta["labels"] = dict(labels)
        meta["managedFields"] = _managed(manager, "Update", minutes_before, api_version)
        meta["name"] = name
        if namespace is not None:
            meta["namespace"] = namespace
        meta["resourceVersion"] = str(self._rv)
        meta["uid"] = object_uid(kind, namespace or "", name)
        return meta
