"""Unknown fields: names an object carries that its kind does not have.

The API server's strict field validation (what kubectl does by default) refuses a manifest with a
field its type does not declare — a typo such as ``nodeSelectr`` or ``resources.requets`` — instead
of dropping it. kubesched reports every such field by its full path: the loader turns them into
warnings (errors with ``--strict``), and a KubeSchedulerConfiguration with one is refused, as
kube-scheduler's strict decoding of its configuration file does.

The field names of the Kubernetes kinds come from :mod:`kubesched.api.known_fields_data`, generated
from the official client's models by ``tools/gen_known_fields.py``; the KubeSchedulerConfiguration
(``kubescheduler.config.k8s.io/v1``) and the Scenario are written out here in the same notation.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Set
from typing import Any

from kubesched.api.checks import idx_path, key_path
from kubesched.api.known_fields_data import KIND_TYPES, TYPES

_PLUGIN_SET = "SchedPluginSet"
_EXTENSION_POINTS = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
                     "reserve", "permit", "preBind", "bind", "postBind", "multiPoint")

#: KubeSchedulerConfiguration v1 (kube-scheduler v1.28) and the args of the in-tree plugins that
#: take some, keyed by the plugin's name in ``pluginConfig`` (staging/src/k8s.io/kube-scheduler/
#: config/v1/types.go and types_pluginargs.go); names prefixed ``Sched`` to stay apart from the
#: Kubernetes types they may refer to (NodeAffinity, TopologySpreadConstraint)
_SCHEDULER_TYPES: Mapping[str, Mapping[str, str]] = {
    "SchedConfiguration": {
        "apiVersion": "", "kind": "", "parallelism": "", "leaderElection": "SchedLeaderElection",
        "clientConnection": "SchedClientConnection", "enableProfiling": "", "enableContentionProfiling": "",
        "percentageOfNodesToScore": "", "podInitialBackoffSeconds": "", "podMaxBackoffSeconds": "",
        "profiles": "[SchedProfile]", "extenders": "[SchedExtender]", "delayCacheUntilActive": "",
    },
    "SchedLeaderElection": {"leaderElect": "", "leaseDuration": "", "renewDeadline": "", "retryPeriod": "",
                            "resourceLock": "", "resourceName": "", "resourceNamespace": ""},
    "SchedClientConnection": {"kubeconfig": "", "acceptContentTypes": "", "contentType": "", "qps": "",
                              "burst": ""},
    "SchedProfile": {"schedulerName": "", "percentageOfNodesToScore": "", "plugins": "SchedPlugins",
                     "pluginConfig": "[SchedPluginConfig]"},
    "SchedPlugins": {point: _PLUGIN_SET for point in _EXTENSION_POINTS},
    _PLUGIN_SET: {"enabled": "[SchedPlugin]", "disabled": "[SchedPlugin]"},
    "SchedPlugin": {"name": "", "weight": ""},
    "SchedPluginConfig": {"name": "", "args": ""},  # args: by plugin, see _PLUGIN_ARGS
    "SchedExtender": {
        "urlPrefix": "", "filterVerb": "", "preemptVerb": "", "prioritizeVerb": "", "weight": "", "bindVerb": "",
        "enableHTTPS": "", "tlsConfig": "SchedExtenderTLS", "httpTimeout": "", "nodeCacheCapable": "",
        "managedResources": "[SchedExtenderResource]", "ignorable": "",
    },
    "SchedExtenderTLS": {"insecure": "", "serverName": "", "certFile": "", "keyFile": "", "caFile": "",
                         "certData": "", "keyData": "", "caData": ""},
    "SchedExtenderResource": {"name": "", "ignoredByScheduler": ""},
    "SchedDefaultPreemptionArgs": {"apiVersion": "", "kind": "", "minCandidateNodesPercentage": "",
                                   "minCandidateNodesAbsolute": ""},
    "SchedInterPodAffinityArgs": {"apiVersion": "", "kind": "", "hardPodAffinityWeight": "",
                                  "ignorePreferredTermsOfExistingPods": ""},
    "SchedNodeAffinityArgs": {"apiVersion": "", "kind": "", "addedAffinity": "NodeAffinity"},
    "SchedNodeResourcesFitArgs": {"apiVersion": "", "kind": "", "ignoredResources": "",
                                  "ignoredResourceGroups": "", "scoringStrategy": "SchedScoringStrategy"},
    "SchedScoringStrategy": {"type": "", "resources": "[SchedResourceSpec]",
                             "requestedToCapacityRatio": "SchedRequestedToCapacityRatio"},
    "SchedResourceSpec": {"name": "", "weight": ""},
    "SchedRequestedToCapacityRatio": {"shape": "[SchedShapePoint]"},
    "SchedShapePoint": {"utilization": "", "score": ""},
    "SchedBalancedAllocationArgs": {"apiVersion": "", "kind": "", "resources": "[SchedResourceSpec]"},
    "SchedPodTopologySpreadArgs": {"apiVersion": "", "kind": "", "defaultConstraints": "[TopologySpreadConstraint]",
                                   "defaultingType": ""},
}
_PLUGIN_ARGS: Mapping[str, str] = {
    "DefaultPreemption": "SchedDefaultPreemptionArgs",
    "InterPodAffinity": "SchedInterPodAffinityArgs",
    "NodeAffinity": "SchedNodeAffinityArgs",
    "NodeResourcesFit": "SchedNodeResourcesFitArgs",
    "NodeResourcesBalancedAllocation": "SchedBalancedAllocationArgs",
    "PodTopologySpread": "SchedPodTopologySpreadArgs",
}
def _type(name: str) -> Mapping[str, str]:
    return _SCHEDULER_TYPES.get(name) or TYPES[name]


#: per type, its field names and its fields that hold objects: name -> (how: "[" a list, "{" a map,
#: "" one; the type)
_SHAPES: dict[str, tuple[Set[str], dict[str, tuple[str, str]]]] = {}


def parse_reference(reference: str) -> tuple[str, str]:
    """A field's reference to the type it holds (``known_fields_data``'s notation, not empty): how
    it holds it ("[" a list, "{" a map, "" one) and the type's name."""
    return (reference[0], reference[1:-1]) if reference[0] in "[{" else ("", reference)


def _shape(type_name: str) -> tuple[Set[str], dict[str, tuple[str, str]]]:
    shape = _SHAPES.get(type_name)
    if shape is None:
        fields = _type(type_name)
        shape = _SHAPES[type_name] = (fields.keys(), {
            key: parse_reference(reference) for key, reference in fields.items() if reference})
    return shape


#: one copy of each text: a dump repeats the same image names, label values, probe paths and
#: timestamps in every replica of a workload, and each text read is a string object of its own
#: (interning them takes a third off the memory of a production cluster's pods)
_share = sys.intern


def _share_strings_of(mapping: dict[Any, Any]) -> None:
    for key, item in mapping.items():
        if type(item) is str:
            mapping[key] = _share(item)


def _share_items(items: list[Any]) -> None:
    for i, item in enumerate(items):
        if type(item) is str:
            items[i] = _share(item)


def _all_known(value: Any, type_name: str) -> bool:
    """Whether ``value`` has no unknown field: the question :func:`_walk` answers, without the
    paths, for the common case of a clean object (a dump of 150 000 pods has millions of fields,
    hence a loop over a stack rather than a call per mapping). On its way it replaces each text of
    a field it passes by its one shared copy (:data:`_share`)."""
    stack: list[tuple[Any, str]] = [(value, type_name)]
    while stack:
        value, type_name = stack.pop()
        if not isinstance(value, dict):
            continue
        fields, nested = _SHAPES.get(type_name) or _shape(type_name)
        if not value.keys() <= fields:
            return False
        for key, child in value.items():
            how = nested.get(key)
            if how is None:
                kind = type(child)
                if kind is str:
                    value[key] = _share(child)
                elif kind is dict:
                    _share_strings_of(child)
                elif kind is list:
                    _share_items(child)
                continue
            shape, sub = how
            if shape == "":
                stack.append((child, sub))
            elif shape == "[":
                if isinstance(child, list):
                    stack.extend([(item, sub) for item in child])
            elif isinstance(child, dict):
                stack.extend([(item, sub) for item in child.values()])
    return True


def _walk(value: Any, type_name: str, path: str, out: list[str]) -> None:
    """Append the paths of ``value``'s unknown fields; values of the wrong shape are left to validation."""
    if not isinstance(value, dict) or _all_known(value, type_name):
        return
    fields = _type(type_name)
    for key, child in value.items():
        if not isinstance(key, str) or key not in fields:
            out.append(key_path(path, key))
            continue
        reference = fields[key]
        sub = key_path(path, key)
        if reference.startswith("["):
            for i, item in enumerate(child if isinstance(child, list) else ()):
                _walk(item, reference[1:-1], idx_path(sub, i), out)
        elif reference.startswith("{"):
            for name, item in (child if isinstance(child, dict) else {}).items():
                _walk(item, reference[1:-1], key_path(sub, name), out)
        elif reference:
            _walk(child, reference, sub, out)


def unknown_fields(obj: Any, path: str = "") -> list[str]:
    """The full paths (prefixed with ``path``) of the fields of ``obj`` that its kind does not declare,
    in document order; for a Scenario, those of the objects its steps create and of its patches.
    Kinds kubesched does not load, and malformed values, are validation's business: none here."""
    if not isinstance(obj, dict):
        return []
    kind = obj.get("kind")
    out: list[str] = []
    if kind == "Scenario":  # its own fields are validated one by one (unknown ones are errors)
        _walk(obj.get("metadata"), "ObjectMeta", key_path(path, "metadata"), out)
        spec = obj.get("spec")
        steps = spec.get("steps") if isinstance(spec, dict) else None
        for i, step in enumerate(steps if isinstance(steps, list) else ()):
            if isinstance(step, dict):
                _step_unknown_fields(step, idx_path(key_path(key_path(path, "spec"), "steps"), i), out)
    elif isinstance(kind, str) and kind in KIND_TYPES:
        _walk(obj, KIND_TYPES[kind], path, out)
    return out


def _step_unknown_fields(step: dict[str, Any], path: str, out: list[str]) -> None:
    out.extend(unknown_fields(step.get("create"), key_path(path, "create")))
    patch = step.get("patch")
    if isinstance(patch, dict) and isinstance(patch.get("kind"), str) and patch["kind"] in KIND_TYPES:
        _walk(patch.get("merge"), KIND_TYPES[patch["kind"]], key_path(key_path(path, "patch"), "merge"), out)


def unknown_configuration_fields(config: Any) -> list[str]:
    """The full paths of a KubeSchedulerConfiguration's unknown fields, including those in the
    ``args`` of the in-tree plugins named in ``pluginConfig``."""
    out: list[str] = []
    _walk(config, "SchedConfiguration", "", out)
    profiles = config.get("profiles") if isinstance(config, dict) else None
    for i, profile in enumerate(profiles if isinstance(profiles, list) else ()):
        entries = profile.get("pluginConfig") if isinstance(profile, dict) else None
        for j, entry in enumerate(entries if isinstance(entries, list) else ()):
            if isinstance(entry, dict) and entry.get("name") in _PLUGIN_ARGS:
                _walk(entry.get("args"), _PLUGIN_ARGS[entry["name"]], f"profiles[{i}].pluginConfig[{j}].args", out)
    return out
