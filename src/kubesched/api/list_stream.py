"""kubectl's List dumps read item by item, so that reading a 150 000-pod dump never holds the whole
file and all of its objects at once.

``kubectl get ... -o json`` and ``-o yaml`` print one ``v1 List`` in a fixed layout:

* JSON, indented by 4: ``{`` / ``"apiVersion": "v1",`` / ``"items": [`` then each item, opened by
  ``{`` and closed by ``}`` or ``},`` alone on a line indented by 8 (JSON strings hold no raw
  newline, so such a line closes an item and nothing else), then ``],`` and the List's other fields;
* YAML: ``apiVersion: v1`` / ``items:`` then each item as a block sequence entry starting with
  ``- `` at the first column (everything inside an item is indented further), then the List's other
  fields at the first column.

The file is read in blocks of 4 MB; every complete item (JSON) or run of 100 items (YAML) is parsed as soon as
it is there, by the same readers a whole document would be read with, and tidied at once (what is
never read, such as ``managedFields``, is dropped before the next block comes). The layout is checked, not trusted:
each piece must parse to exactly the items it was cut around and the List's fields must parse
too; otherwise :func:`read_list_items` answers None and the file is read as one document, by the
readers that word the errors. Cutting a valid layout at those lines gives the same items the whole
document holds, so the result is the same either way.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from kubesched.api.errors import ManifestError
from kubesched.api.manifest_text import yaml_documents

#: bytes read at a time
BLOCK = 4 * 1024 * 1024
#: YAML items parsed together: fewer calls into the parser, but the parser's tree of a piece is
#: much bigger than its text, so small pieces keep the peak low (and are no slower: on a 20 000-pod
#: dump 2000 items at a time took a sixth longer than 100)
YAML_ITEMS_PER_PIECE = 100

_JSON_HEAD = b'{\n    "apiVersion": "v1",\n    "items": [\n'
_JSON_EMPTY_HEAD = b'{\n    "apiVersion": "v1",\n    "items": [],\n'
_JSON_ITEM_END = re.compile(rb"\n        },?\n")
_YAML_HEAD = b"apiVersion: v1\nitems:\n"
_YAML_ITEM_START = re.compile(rb"^-(?: |$)", re.MULTILINE)
_YAML_ITEMS_END = re.compile(rb"^[^ \-\n]", re.MULTILINE)

Tidy = Callable[[Any], None]


class _NotTheLayout(Exception):
    """The file is not laid out as kubectl writes a List: it is read as one document instead."""


def read_list_items(path: Path, tidy: Tidy, *, skip_managed_fields: bool = False
                    ) -> tuple[list[Any], dict[str, Any]] | None:
    """The items of the kubectl List in ``path``, in order, each passed to ``tidy`` (which changes it
    in place, e.g. drops what is never read) as soon as it is parsed, and the List without its
    items; None if the file is not laid out as such a List (see the module's description).
    ``skip_managed_fields``: the YAML items' ``metadata.managedFields`` are cut out of the text
    before it is parsed (see :func:`_without_managed_fields`); JSON reads them too fast to gain."""
    json = path.suffix.lower() == ".json"
    try:
        with path.open("rb") as f:
            head = f.read(len(_JSON_HEAD) if json else len(_YAML_HEAD))
            if json:
                return _json_items(f, head, tidy)
            return _yaml_items(f, head, tidy, str(path), skip_managed_fields)
    except (_NotTheLayout, ManifestError, orjson.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return None


# -- JSON ---------------------------------------------------------------------------------------------
def _json_items(f: Any, head: bytes, tidy: Tidy) -> tuple[list[Any], dict[str, Any]]:
    items: list[Any] = []
    if head != _JSON_HEAD:
        if _JSON_EMPTY_HEAD.startswith(head):
            return items, _json_rest((head + f.read())[len(_JSON_HEAD) - 1:])
        raise _NotTheLayout
    buffer = b""
    while True:
        block = f.read(BLOCK)
        buffer += block
        view = memoryview(buffer)  # items parsed where they lie, not copied out first
        start = 0
        while True:
            end = _JSON_ITEM_END.search(buffer, start)
            if end is None:
                break
            item = orjson.loads(view[start:end.start() + 10])  # through the closing brace
            if not isinstance(item, dict):
                raise _NotTheLayout
            tidy(item)
            items.append(item)
            start = end.end()
            if not end.group().endswith(b",\n"):  # the last item: the List's other fields follow
                return items, _json_rest(buffer[start:] + f.read())
        view.release()
        buffer = buffer[start:]
        if not block:
            raise _NotTheLayout


def _json_rest(tail: bytes) -> dict[str, Any]:
    """The List's fields after ``items``, from ``tail``: what follows the last item (``],`` ...)."""
    body = tail.lstrip()
    if not body.startswith(b"],"):
        raise _NotTheLayout
    rest = orjson.loads(b'{"apiVersion": "v1",' + body[2:])
    if not isinstance(rest, dict) or rest.get("kind") != "List" or "items" in rest:
        raise _NotTheLayout
    return rest


# -- YAML ---------------------------------------------------------------------------------------------
def _yaml_items(f: Any, head: bytes, tidy: Tidy, file: str, skip_managed_fields: bool
                ) -> tuple[list[Any], dict[str, Any]]:
    if head != _YAML_HEAD:
        raise _NotTheLayout
    items: list[Any] = []
    buffer = b""
    while True:
        block = f.read(BLOCK)
        buffer += block
        end = _YAML_ITEMS_END.search(buffer)
        if end is not None:  # the List's other fields: everything from there on is read
            text = buffer[:end.start()]
            _parse_yaml_items(text, _item_starts(text), items, tidy, file, skip_managed_fields)
            return items, _yaml_rest(buffer[end.start():] + f.read(), file)
        if not block:
            raise _NotTheLayout
        starts = _item_starts(buffer)
        if len(starts) > 1:  # every item but the last is complete
            _parse_yaml_items(buffer[:starts[-1]], starts[:-1], items, tidy, file, skip_managed_fields)
            buffer = buffer[starts[-1]:]


def _item_starts(text: bytes) -> list[int]:
    return [m.start() for m in _YAML_ITEM_START.finditer(text)]


def _parse_yaml_items(text: bytes, starts: list[int], items: list[Any], tidy: Tidy, file: str,
                      skip_managed_fields: bool = False) -> None:
    """Parse the items of ``text``, which begin at ``starts``."""
    if not starts or starts[0] != 0:
        if text.strip():
            raise _NotTheLayout
        return
    for first in range(0, len(starts), YAML_ITEMS_PER_PIECE):
        last = first + YAML_ITEMS_PER_PIECE
        piece = text[starts[first]:starts[last]] if last < len(starts) else text[starts[first]:]
        docs = yaml_documents(_without_managed_fields(piece) if skip_managed_fields else piece, file)
        if len(docs) != 1 or not isinstance(docs[0][1], list):
            raise _NotTheLayout
        parsed = docs[0][1]
        if len(parsed) != min(last, len(starts)) - first:
            raise _NotTheLayout
        for item in parsed:
            tidy(item)
        items.extend(parsed)


#: an item's ``metadata.managedFields`` as kubectl writes it: the key indented by 4 (the metadata's
#: fields), then the list's entries, each line either an entry's first (``    - ``) or indented by
#: 6 or more (YAML indents what is inside an entry, multi-line values included, further)
_YAML_MANAGED_FIELDS = re.compile(rb"\n    managedFields:\n(?:    - [^\n]*\n|      [^\n]*\n)*")
_YAML_METADATA = b"\n  metadata:\n"
#: a line indented by 2 or less: an item's own field, or the next item
_YAML_SHALLOW_LINE = re.compile(rb"\n {0,2}[^ \n]")


def _without_managed_fields(piece: bytes) -> bytes:
    """``piece`` (items of a kubectl List) without the items' ``metadata.managedFields``: which
    manager wrote which field, nearly half of a dump's YAML and read by nothing, cut out before the
    text is checked and parsed. A managedFields key is cut only where it is a field of an item's
    metadata: the last line indented by 2 before it opens the metadata."""
    kept: list[bytes] = []
    at = 0
    for found in _YAML_MANAGED_FIELDS.finditer(piece):
        start = found.start()
        metadata = piece.rfind(_YAML_METADATA, at, start + 1)
        if metadata < 0 or _YAML_SHALLOW_LINE.search(piece, metadata + len(_YAML_METADATA) - 1, start + 1):
            continue
        kept.append(piece[at:start + 1])
        at = found.end()
    if not kept:
        return piece
    kept.append(piece[at:])
    return b"".join(kept)


def _yaml_rest(tail: bytes, file: str) -> dict[str, Any]:
    docs = yaml_documents(b"apiVersion: v1\n" + tail, file)
    if len(docs) != 1 or not isinstance(docs[0][1], dict) or docs[0][1].get("kind") != "List" \
            or "items" in docs[0][1]:
        raise _NotTheLayout
    rest: dict[str, Any] = docs[0][1]
    return rest
