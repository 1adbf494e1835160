"""Regenerate ``src/kubesched/api/known_fields_data.py``: the field names of every kind the loader
accepts, read from the models of the official ``kubernetes`` Python client (``pip install
'kubesched[kube]'``), for the unknown-field warnings of ``kubesched.api.known_fields``.

    python tools/gen_known_fields.py            # rewrite the module
    python tools/gen_known_fields.py --check    # exit 1 if the committed module is out of date

The kinds are those of ``src/kubesched/k8s/kinds.py`` that a manifest may hold. The client's
models (``openapi_types`` and ``attribute_map`` of ``V1Pod`` and the types it refers to) are
generated from the API server's OpenAPI document, so they name every field of the API version the
client was built for: a superset of v1.28's, once the few v1.28 alpha fields dropped since
(:data:`V1_28_FIELDS`) are added back. NodeResourceTopology and PodGroup are CRDs the client does
not know: their fields are written out below (:data:`CRD_TYPES`). The output is deterministic:
types and fields in sorted order, one type per line.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[1] / "src"
OUTPUT = SRC / "kubesched" / "api" / "known_fields_data.py"

#: NodeResourceTopology (topology.node.k8s.io/v1alpha2), in the same notation as the output
NRT_TYPES: dict[str, dict[str, str]] = {
    "NodeResourceTopology": {"apiVersion": "", "kind": "", "metadata": "ObjectMeta", "topologyPolicies": "",
                             "zones": "[NRTZone]", "attributes": "[NRTAttributeInfo]"},
    "NRTZone": {"name": "", "type": "", "parent": "", "costs": "[NRTCostInfo]",
                "attributes": "[NRTAttributeInfo]", "resources": "[NRTResourceInfo]"},
    "NRTCostInfo": {"name": "", "value": ""},
    "NRTAttributeInfo": {"name": "", "value": ""},
    "NRTResourceInfo": {"name": "", "capacity": "", "allocatable": "", "available": ""},
}


#: PodGroup (scheduling.x-k8s.io/v1alpha1, scheduler-plugins' Coscheduling), likewise
POD_GROUP_TYPES: dict[str, dict[str, str]] = {
    "PodGroup": {"apiVersion": "", "kind": "", "metadata": "ObjectMeta", "spec": "PodGroupSpec",
                 "status": "PodGroupStatus"},
    "PodGroupSpec": {"minMember": "", "minResources": "", "scheduleTimeoutSeconds": ""},
    "PodGroupStatus": {"phase": "", "occupiedBy": "", "scheduled": "", "running": "", "succeeded": "",
                       "failed": "", "scheduleStartTime": ""},
}


#: the kinds whose types are written out above (CRDs: the client does not know them)
CRD_TYPES = {"NodeResourceTopology": NRT_TYPES, "PodGroup": POD_GROUP_TYPES}


#: v1.28 fields that the client's newer API no longer has (alpha fields dropped later): type -> fields
V1_28_FIELDS: dict[str, dict[str, str]] = {
    "PodResourceClaim": {"source": "ClaimSource"},  # replaced by resourceClaimName in v1.31
    "ClaimSource": {"resourceClaimName": "", "resourceClaimTemplateName": ""},
}


def root_models() -> dict[str, str]:
    """Kind -> the client's model of it (``V1Pod``), for every Kubernetes kind the loader accepts (the
    table of ``kubesched.k8s.kinds``, read from this checkout) but the CRDs of :data:`CRD_TYPES`."""
    sys.path.insert(0, str(SRC))
    from kubesched.k8s.kinds import KINDS

    return {kind.name: kind.version.capitalize() + kind.name for kind in KINDS.values()
            if kind.has_known_fields and kind.name not in CRD_TYPES}


def _short(model: str) -> str:
    """``V1PodSpec`` -> ``PodSpec``; other prefixes (``V1alpha3...``, ``CoreV1...``) are kept."""
    return model[2:] if re.fullmatch(r"V1[A-Z]\w*", model) else model


def collect(client: Any) -> dict[str, dict[str, str]]:
    """Every model reachable from :func:`root_models`: short name -> {JSON field: reference}. A
    reference is ``""`` (scalar, list or map of scalars, or free-form), ``"T"`` (an object of type
    T), ``"[T]"`` (a list of them) or ``"{T}"`` (a map of string to them)."""
    types: dict[str, dict[str, str]] = {}
    origin: dict[str, str] = {}

    def reference(type_text: str) -> str:
        if m := re.fullmatch(r"[Ll]ist\[(.+)\]", type_text):
            inner = reference(m.group(1))
            return f"[{inner}]" if inner and not inner.startswith(("[", "{")) else ""
        if m := re.fullmatch(r"[Dd]ict\((?:str|\w+), (.+)\)|Dict\[str, (.+)\]", type_text):
            inner = reference(m.group(1) or m.group(2))
            return f"{{{inner}}}" if inner and not inner.startswith(("[", "{")) else ""
        model = getattr(client, type_text, None)
        if model is None or not hasattr(model, "openapi_types"):
            return ""  # str, int, bool, datetime, object (IntOrString, RawExtension, FieldsV1)
        return visit(type_text)

    def visit(model_name: str) -> str:
        name = _short(model_name)
        if origin.setdefault(name, model_name) != model_name:
            raise SystemExit(f"two models shorten to {name}: {origin[name]} and {model_name}")
        if name in types:
            return name
        model = getattr(client, model_name)
        fields: dict[str, str] = {}
        types[name] = fields
        for attribute, type_text in model.openapi_types.items():
            fields[model.attribute_map[attribute]] = reference(type_text)
        return name

    for model_name in root_models().values():
        visit(model_name)
    for name, fields in V1_28_FIELDS.items():
        types.setdefault(name, {}).update(fields)
    for crd_types in CRD_TYPES.values():
        for name, fields in crd_types.items():
            if name in types:
                raise SystemExit(f"{name} is defined twice")
            types[name] = fields
    return types


def render(types: dict[str, dict[str, str]], client_version: str) -> str:
    kinds = {**{kind: _short(model) for kind, model in root_models().items()}, **{kind: kind for kind in CRD_TYPES}}
    lines = [
        '"""Field names of the kinds kubesched loads. Generated by tools/gen_known_fields.py from the models',
        f"of the kubernetes Python client {client_version} (plus NodeResourceTopology v1alpha2 and PodGroup v1alpha1): do not edit.",
        "",
        'A type maps each JSON field to "" (a scalar, a list or map of scalars, or free-form), "T" (an',
        'object of type T), "[T]" (a list of them) or "{T}" (a map of string to them).',
        '"""',
        "",
        "from types import MappingProxyType",
        "",
        "#: kind -> its type",
        "KIND_TYPES = MappingProxyType({",
        *(f"    {kind!r}: {kinds[kind]!r}," for kind in sorted(kinds)),
        "})",
        "",
        "#: type -> {field: reference}",
        "TYPES = MappingProxyType({",
    ]
    for name in sorted(types):
        fields = ", ".join(f"{f!r}: {types[name][f]!r}" for f in sorted(types[name]))
        lines.append(f"    {name!r}: {{{fields}}},")
    lines.append("})")
    return "\n".join(lines).replace("'", '"') + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare with the committed module")
    args = parser.parse_args()
    import kubernetes
    import kubernetes.client

    text = render(collect(kubernetes.client), kubernetes.__version__)
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT} is out of date: run python tools/gen_known_fields.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
