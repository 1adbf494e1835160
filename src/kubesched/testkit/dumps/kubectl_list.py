"""A dump's items written as kubectl prints a ``v1 List``: ``-o yaml`` (keys sorted, 2-space block
style, no anchors: the bytes PyYAML writes, made several times faster by :func:`yaml_item`),
``-o json`` (4-space indent) or JSON Lines (one item a line).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import IO, Any

import yaml

from kubesched.k8s.objects import Obj

#: the formats :meth:`~kubesched.testkit.dumps.cluster.ClusterDump.write` writes, with their file suffixes
FORMATS = {"yaml": ".yaml", "json": ".json", "jsonl": ".jsonl"}


class _KubectlYaml(yaml.CSafeDumper if hasattr(yaml, "CSafeDumper") else yaml.SafeDumper):  # type: ignore[misc]
    """kubectl never writes anchors: an object shared between items is written out at each place."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_PLAIN = re.compile(r"[A-Za-z0-9._/][A-Za-z0-9._/:{}\[\]\",=+@-]*")
_STR_TAG = "tag:yaml.org,2002:str"
_RESOLVER = yaml.resolver.Resolver()
#: PyYAML's line width: a scalar with spaces that would reach past it may be folded
_WIDTH = 80


class _Fallback(Exception):
    """An item that :func:`yaml_item` cannot write byte for byte as PyYAML does."""


@functools.lru_cache(maxsize=1 << 12)
def _pyyaml_scalar(value: str) -> str | None:
    """How PyYAML writes ``value`` in a block sequence, if on one line and not double-quoted."""
    text = yaml.dump([value], Dumper=_KubectlYaml, default_flow_style=False)
    if not text.startswith("- ") or text.count("\n") != 1 or text[2] == '"':
        return None
    return text[2:-1]


def _scalar(value: Any, column: int) -> str:
    """``value`` as PyYAML writes a scalar that starts at ``column``."""
    if isinstance(value, str):
        if _PLAIN.fullmatch(value) and not value.endswith(":") and not value.startswith("..."):
            if _RESOLVER.resolve(yaml.ScalarNode, value, (True, False)) == _STR_TAG:
                return value
            return f"'{value}'"
        text = _pyyaml_scalar(value)
        if text is None or (" " in value and column + len(text) > _WIDTH):
            raise _Fallback
        return text
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    raise _Fallback


def _yaml_mapping(obj: Obj, indent: int, out: list[str], first: str | None = None) -> None:
    """A non-empty block mapping at ``indent``; ``first``: the prefix of its first line (``- `` of the
    sequence item it opens) instead of the indentation."""
    pad = " " * indent
    for key, value in sorted(obj.items()):
        if not isinstance(key, str) or not key:
            raise _Fallback
        name = _scalar(key, indent)
        if len(name) >= 128:  # PyYAML writes a long key as a complex key
            raise _Fallback
        head = f"{first if first is not None else pad}{name}:"
        first = None
        if isinstance(value, dict):
            if value:
                out.append(head + "\n")
                _yaml_mapping(value, indent + 2, out)
            else:
                out.append(head + " {}\n")
        elif isinstance(value, list):
            if value:
                out.append(head + "\n")
                _yaml_sequence(value, indent, out)
            else:
                out.append(head + " []\n")
        else:
            out.append(f"{head} {_scalar(value, len(head) + 1)}\n")


def _yaml_sequence(items: list[Any], indent: int, out: list[str]) -> None:
    """A non-empty block sequence whose dashes are at ``indent``."""
    dash = " " * indent + "- "
    for value in items:
        if isinstance(value, dict):
            if value:
                _yaml_mapping(value, indent + 2, out, first=dash)
            else:
                out.append(dash + "{}\n")
        elif isinstance(value, list):
            if value:
                raise _Fallback
            out.append(dash + "[]\n")
        else:
            out.append(f"{dash}{_scalar(value, indent + 2)}\n")


def yaml_item(item: Obj) -> str:
    """``item`` as an entry of the List's ``items`` (``- apiVersion: ...``), the same text PyYAML
    writes (keys sorted, block style, no anchors), several times faster."""
    out: list[str] = []
    try:
        _yaml_sequence([item], 0, out)
    except _Fallback:
        return yaml.dump([item], Dumper=_KubectlYaml, sort_keys=True, default_flow_style=False)
    return "".join(out)


def write_items(items: Sequence[Obj], out: IO[str], fmt: str) -> None:
    """Write ``items`` as one ``v1 List`` the way ``kubectl get ... -o yaml`` (``fmt`` yaml) or
    ``-o json`` (json) prints it, or one item a line (jsonl): the bytes of ``yaml.dump(the_list,
    sort_keys=True)`` (without anchors) and of ``json.dump(the_list, indent=4, sort_keys=True)``
    and a newline, written an item at a time."""
    if fmt == "yaml":
        out.write("apiVersion: v1\nitems:\n" if items else "apiVersion: v1\nitems: []\n")
        for item in items:
            out.write(yaml_item(item))
        out.write("kind: List\nmetadata:\n  resourceVersion: ''\n")
    elif fmt == "json":
        out.write('{\n    "apiVersion": "v1",\n    "items": [')
        for i, item in enumerate(items):
            text = json.dumps(item, indent=4, sort_keys=True, ensure_ascii=False).replace("\n", "\n        ")
            out.write(("," if i else "") + "\n        " + text)
        out.write(("\n    " if items else "") + '],\n    "kind": "List",\n    "metadata": {\n'
                  '        "resourceVersion": ""\n    }\n}\n')
    elif fmt == "jsonl":
        for item in items:
            out.write(json.dumps(item, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n")
    else:
        raise ValueError(f"unknown dump format {fmt!r} (one of {', '.join(FORMATS)})")
