"""Manifest text to Python objects: YAML streams, JSON documents and JSON Lines, fast and bounded.

* **JSON** (``kubectl get -o json``) is read with orjson; **JSON Lines** (one object per line, as
  ``jq -c '.items[]'`` writes a dump) line by line, each line a document.
* **YAML** has two readers that give the same objects. The general one is PyYAML over libyaml,
  with the bounds of :mod:`kubesched.api.boundedyaml` (alias bombs, hostile depth) and YAML 1.1's
  resolution of plain scalars (``yes`` is true, ``017`` is 15, ``1:20`` is 80), the way Kubernetes'
  own YAML decoder reads them too. It builds a node per value, and so reads about 4 MB/s and holds
  several copies of the input at once. The fast one is rapidyaml (a C++ parser) turning the stream
  into JSON that orjson reads, about 50 MB/s; rapidyaml resolves plain scalars as YAML 1.2 does and
  has no bounds of its own, so it is used only on text that :func:`plain_yaml` finds free of
  everything where the two readers could differ: anchors, aliases, tags and merge keys; flow
  collections with content; plain scalars that YAML 1.1 and 1.2 read differently (``yes``, ``~``,
  ``0x1F``, ``1e3``, numeric or boolean keys, integers past 64 bits); escapes, tabs and carriage
  returns. kubectl's own output (``-o yaml``) passes, as it quotes every string that would not
  read back as a string. Anything else, and any error of the fast reader, goes to the general
  reader, which also writes the error messages.

The choice is an exact one: ``tests/api/test_manifest_text.py`` holds the fast reader against the
general one on generated YAML.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson
import yaml

from kubesched.api.boundedyaml import MAX_DEPTH, YamlLimitError, check_bounds, compose_documents
from kubesched.api.errors import ManifestError
from kubesched.des.heap import collector_paused

try:  # rapidyaml: optional at import time so that a broken wheel only costs speed
    import ryml as _ryml
except ImportError:  # pragma: no cover - the package is a dependency
    _ryml = None

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    """Safe loader that keeps timestamps as strings (objects stay JSON-like)."""


YamlLoader.add_constructor("tag:yaml.org,2002:timestamp", YamlLoader.construct_yaml_str)

# -- what the fast reader may not see -----------------------------------------------------------------
# Each pattern below is searched for on its own: with a literal start, Python's regular expressions
# skip ahead quickly, where one pattern of alternatives would try every one at every position.
# Possessive repeats (`*+`) keep a failed match from trying every shorter run of spaces.
#
# A plain scalar ends at the end of the line or before a comment; a key, before ": ".
_END = r" *+(?:#|$)"
_KEY_END = r" *+:(?: |$)"
# YAML 1.1 words that are not strings there (true, false and null read alike in both readers)
_WORDS_11 = r"(?:yes|Yes|YES|no|No|NO|True|TRUE|False|FALSE|on|On|ON|off|Off|OFF|Null|NULL|~)"
# anything shaped like a number in either YAML version: signs, digits, "_", ":" (base 60), ".",
# exponents, radix prefixes, infinities and not-a-numbers
_NUMBERISH = (r"(?:[-+]?(?=[0-9]|\.[0-9_])[0-9_]*(?::[0-9_]+)*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9_]+)?"
              r"|[-+]?0[xXoObB][0-9a-fA-F_]+|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))")
# the numbers both readers read alike: decimal integers that fit 64 bits, plain decimal fractions
_SAME_NUMBER = r"(?:-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]+)?)"
# the first characters of everything below (a quick way past the ordinary plain scalars)
_FIRST = r"(?=[!&*%@`?\[{yYnNtTfFoO~0-9+\-.])"
# a value the readers may read apart: tags, anchors, aliases, directives, reserved characters,
# complex keys, flow collections with content, YAML 1.1 words, numbers other than the common ones
_VALUE = rf"(?:[!&*%@`?]|[\[{{]\ *[^\]}}\s]|{_WORDS_11}{_END}|(?!{_SAME_NUMBER}{_END}){_NUMBERISH}{_END})"
# a key the readers may read apart: one that is not a string in YAML 1.1 or 1.2
_KEY = rf"(?:{_WORDS_11}|{_NUMBERISH}|true|false|null|True|False|TRUE|FALSE|Null|NULL){_KEY_END}"
_UNSAFE = tuple(re.compile(pattern.encode(), re.MULTILINE) for pattern in (
    r"[\t\r\x00-\x08\x0b\x0c\x0e-\x1f\x7f]",  # tabs, carriage returns, control characters
    r"\xef\xbb\xbf",  # byte order marks
    r"\\[^\"\\/bfnrtu]",  # escapes JSON does not share (\x41, \N, \_, \e, \0, \U, ...)
    r"<<",  # merge keys
    r"\n {256}",  # deep block nesting
    r"- - (?:- *){30}",  # deep sequences of sequences
    rf": ++{_FIRST}{_VALUE}",  # after "key: "
    rf"- ++{_FIRST}(?:{_VALUE}|{_KEY})",  # after a sequence entry's dash
    rf"\n *+{_FIRST}(?:{_VALUE}|{_KEY})",  # at a line's start
    rf"\A *+{_FIRST}(?:{_VALUE}|{_KEY})",  # at the text's start
    r"\n%",  # directives (one at the very start is looked for apart: see plain_yaml)
))


def plain_yaml(data: bytes) -> bool:
    """Whether the UTF-8 ``data`` keeps to the YAML both readers read alike (see the module's
    description). False positives only cost speed; there are no false negatives by design, and
    the differential test looks for them."""
    return not data.startswith(b"%") and not any(pattern.search(data) for pattern in _UNSAFE)


# -- YAML -----------------------------------------------------------------------------------------------
def yaml_documents(text: str | bytes, file: str, *, fast: bool = True) -> list[tuple[int, Any]]:
    """The documents of a YAML stream (text, or UTF-8 bytes) as ``(1-based number, object)``;
    raises ManifestError (UnicodeDecodeError for bytes that are not UTF-8). ``fast=False``: the
    general reader only (the same objects, slower; for text expected to hold an error, whose
    message the general reader writes anyway)."""
    with collector_paused():
        data = text.encode("utf-8") if isinstance(text, str) else text
        if fast and _ryml is not None and plain_yaml(data):
            try:
                return _fast_yaml_documents(data)
            except Exception:  # noqa: BLE001 - the general reader decides, and words the error
                pass
        return _general_yaml_documents(text if isinstance(text, str) else text.decode("utf-8"), file)


def _fast_yaml_documents(data: bytes) -> list[tuple[int, Any]]:
    assert _ryml is not None
    tree = _ryml.parse_in_arena(data)
    root = tree.root_id()
    if tree.is_stream(root):
        ids = []
        child = tree.first_child(root)
        while child != _ryml.NONE:
            ids.append(child)
            child = tree.next_sibling(child)
    else:
        ids = [root]
    docs = [(number, orjson.loads(_json_of(tree, node))) for number, node in enumerate(ids, start=1)]
    if any(obj is None for _, obj in docs):
        raise ValueError("an empty document: the general reader counts those")
    return docs


def _json_of(tree: Any, node: int) -> memoryview:
    """The JSON text of ``node``, written into a buffer Python owns: rapidyaml's ``emit_json_malloc``
    never frees the copy it makes (about 1.4 bytes per byte of YAML read, 240 MB of a 20 000-pod
    dump's, kept until the process ends)."""
    assert _ryml is not None
    buffer = bytearray(_ryml.compute_json_length(tree, node))
    return _ryml.emit_json_in_place(tree, buffer, node)  # type: ignore[no-any-return]


def _general_yaml_documents(text: str, file: str) -> list[tuple[int, Any]]:
    docs: list[tuple[int, Any]] = []
    loader = YamlLoader(text)
    try:
        nodes, failure = compose_documents(loader)
        for node in nodes:
            if node is not None:
                check_bounds(node, len(docs) + 1)
            docs.append((len(docs) + 1, loader.construct_document(node) if node is not None else None))
        if failure is not None:
            raise failure
    except YamlLimitError as exc:
        raise ManifestError(f"refused: {exc}", file=file, document=exc.document) from exc
    except yaml.MarkedYAMLError as exc:
        if "exceeded maximum nesting depth" in (exc.problem or ""):
            # PyYAML >= 6.0.4 stops deep nesting itself, sooner than our own bound would
            raise ManifestError(f"refused: nested more than {MAX_DEPTH} levels deep", file=file,
                                document=len(docs) + 1) from exc
        mark = exc.problem_mark or exc.context_mark
        line = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = ", ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        raise ManifestError(f"{line}YAML syntax error: {problem}", file=file, document=len(docs) + 1) from exc
    except yaml.YAMLError as exc:
        raise ManifestError(f"YAML error: {exc}", file=file, document=len(docs) + 1) from exc
    finally:
        loader.dispose()
    return docs


# -- JSON -----------------------------------------------------------------------------------------------
def _too_deep(exc: orjson.JSONDecodeError) -> bool:
    """Whether orjson stopped at its nesting limit (its message names it)."""
    return "depth limit" in str(exc) or "recursion limit" in str(exc)


def json_document(data: bytes | str, file: str) -> Any:
    """One JSON document; raises ManifestError naming the line and column of a syntax error."""
    with collector_paused():
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            if _too_deep(exc):
                raise ManifestError("refused: nested too deep", file=file, document=1) from exc
            raise ManifestError(f"line {exc.lineno}, column {exc.colno}: JSON syntax error: {exc.msg}",
                                file=file, document=1) from exc


def json_lines(data: bytes, file: str) -> Iterator[tuple[int, Any]]:
    """The objects of a JSON Lines text as ``(line number, object)``; blank lines are skipped."""
    with collector_paused():
        for number, line in enumerate(data.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                yield number, orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                detail = "nested too deep" if _too_deep(exc) else f"column {exc.colno}: {exc.msg}"
                raise ManifestError(f"JSON Lines syntax error: {detail}", file=file, document=number) from exc
