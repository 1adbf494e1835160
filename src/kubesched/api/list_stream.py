"""kubectl's List dumps read item by item, so that reading a 150 000-pod dump never holds the whole
file and all of its objects at once.

``kubectl get ... -o json`` and ``-o yaml`` print one ``v1 List`` in a fixed layout:

* JSON, indented by 4: ``{`` / ``"apiVersion": "v1",`` / ``"items": [`` then each item, opened by
  ``{`` and closed by ``}`` or ``},`` alone on a line indented by 8 (JSON strings hold no raw
  newline, so such a line closes an item and nothing else), then ``],`` and the List's other fields;
* YAML: ``apiVersion: v1`` / ``items:`` then each item as a block sequence entry starting with
  ``- `` at the first column (or at the third, where ``items:`` indents its sequence; everything
  inside an item is indented further), then the List's other fields at the first column.

The file is read in blocks of 4 MB (a JSON file that can be, from the file mapped into memory, see
:func:`_mapped_json_items`); every complete item (JSON) or run of 100 items (YAML) is parsed as soon as
it is there, by the same readers a whole document would be read with, and tidied at once (what is
never read, such as ``managedFields``, is dropped before the next block comes). The layout is checked, not trusted:
each piece must parse to exactly the items it was cut around and the List's fields must parse
too; otherwise :func:`read_list_items` answers None and the file is read as one document, by the
readers that word the errors. Cutting a valid layout at those lines gives the same items the whole
document holds, so the result is the same either way.

A YAML List that is laid out so but broken is refused as it is read (a ManifestError naming the
file's line and the item, see :mod:`kubesched.api.list_refusal`), not read again whole (which took
gigabytes for a cut dump of a few hundred megabytes): one that ends among its items, without the
List's closing ``kind: List`` (cut short), an item that does not parse where no later text could
mend it, or List fields that do not parse.
"""

from __future__ import annotations

import io
import mmap
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from kubesched.api.errors import ManifestError
from kubesched.api.list_refusal import item_refusal, shifted
from kubesched.api.manifest_text import yaml_documents
from kubesched.api.validation import object_ref

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
_YAML_ITEMS_END = re.compile(rb"^[^ \-\n#]", re.MULTILINE)

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
    except _Refused as refused:
        raise refused.error from None
    except (_NotTheLayout, ManifestError, orjson.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return None


# -- JSON ---------------------------------------------------------------------------------------------
def _json_items(f: Any, head: bytes, tidy: Tidy) -> tuple[list[Any], dict[str, Any]]:
    items: list[Any] = []
    if head != _JSON_HEAD:
        if _JSON_EMPTY_HEAD.startswith(head):
            return items, _json_rest((head + f.read())[len(_JSON_HEAD) - 1:])
        raise _NotTheLayout
    mapped = _mapped(f)
    if mapped is not None:
        with mapped:
            return _mapped_json_items(mapped, items, tidy)
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
            items.append(_item(view, start, end, tidy))
            start = end.end()
            if not end.group().endswith(b",\n"):  # the last item: the List's other fields follow
                return items, _json_rest(buffer[start:] + f.read())
        view.release()
        buffer = buffer[start:]
        if not block:
            raise _NotTheLayout


def _item(view: memoryview, start: int, end: re.Match[bytes], tidy: Tidy) -> dict[str, Any]:
    """The List's item from ``start`` up to the line ``end`` matched, parsed where it lies and
    tidied."""
    item = orjson.loads(view[start:end.start() + 10])  # through the closing brace
    if not isinstance(item, dict):
        raise _NotTheLayout
    tidy(item)
    return item


def _mapped(f: Any) -> mmap.mmap | None:
    """The file mapped into memory (read-only), or None where it cannot be (a pipe, an empty file)."""
    try:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError, io.UnsupportedOperation):
        return None


def _mapped_json_items(mapped: mmap.mmap, items: list[Any], tidy: Tidy) -> tuple[list[Any], dict[str, Any]]:
    """:func:`_json_items` on the file mapped into memory: each item parsed where it lies in the
    file (no block copied out of it, none joined to the rest of the one before: a seventh of the
    time of reading a dump), cut at the same lines. What has been parsed is handed back to the
    system every 16 blocks, so that the mapped file never counts in the process's memory for more."""
    _advise(mapped, getattr(mmap, "MADV_SEQUENTIAL", None), 0, len(mapped))
    view = memoryview(mapped)
    try:
        start = len(_JSON_HEAD)
        released = 0
        while True:
            end = _JSON_ITEM_END.search(mapped, start)
            if end is None:
                raise _NotTheLayout
            items.append(_item(view, start, end, tidy))
            start = end.end()
            if not end.group().endswith(b",\n"):  # the last item: the List's other fields follow
                return items, _json_rest(mapped[start:])
            if start - released > 16 * BLOCK:
                done = start - start % mmap.PAGESIZE
                _advise(mapped, getattr(mmap, "MADV_DONTNEED", None), released, done - released)
                released = done
    finally:
        view.release()


def _advise(mapped: mmap.mmap, advice: int | None, start: int, length: int) -> None:
    """Tell the system how the mapped file is used, where it can be told (only ever a saving)."""
    if advice is not None and length > 0:
        try:
            mapped.madvise(advice, start, length)
        except OSError:
            pass


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
class _Refused(Exception):
    """The List is laid out as kubectl writes one but is broken (typically cut short): ``error`` says
    where, and the file is refused without being read again as one document."""

    def __init__(self, error: ManifestError) -> None:
        super().__init__(str(error))
        self.error = error


def _yaml_items(f: Any, head: bytes, tidy: Tidy, file: str, skip_managed_fields: bool
                ) -> tuple[list[Any], dict[str, Any]]:
    if head != _YAML_HEAD:
        raise _NotTheLayout
    return _YamlList(file, tidy, skip_managed_fields).read(f)


class _YamlList:
    """The items of a kubectl YAML List, read from a file a block at a time (see the module's
    description); what is broken past repair is refused (:class:`_Refused`), naming the item."""

    def __init__(self, file: str, tidy: Tidy, skip_managed_fields: bool) -> None:
        self.file = file
        self.tidy = tidy
        self.skip_managed_fields = skip_managed_fields
        self.items: list[Any] = []
        #: the file's line (1-based) that the text being read starts on: after the List's first two
        self.line = 3
        #: the column of the items' dashes (kubectl: 0; 2 where ``items:`` indents its sequence)
        self.indent = 0
        self.item_start = _YAML_ITEM_START
        self.items_end = _YAML_ITEMS_END

    def read(self, f: Any) -> tuple[list[Any], dict[str, Any]]:
        buffer = f.read(BLOCK)
        if not buffer.strip():
            raise _Refused(ManifestError("the file ends right after `items:`: it looks cut short", file=self.file,
                                         document=1, path="items"))
        if buffer.startswith((b"  - ", b"  -\n")):
            self.indent = 2
            self.item_start = re.compile(rb"^  -(?: |$)", re.MULTILINE)
            self.items_end = re.compile(rb"^ ?[^ \n#]", re.MULTILINE)
        block = buffer
        while True:
            end = self.items_end.search(buffer)
            if end is not None:  # the List's other fields: everything from there on is read
                text = buffer[:end.start()]
                self._parse(text, self._starts(text), final=False)
                self.line += text.count(b"\n")
                return self.items, self._rest(buffer[end.start():] + f.read())
            starts = self._starts(buffer)
            if not block:  # the file ends among the items
                self._parse(buffer, starts, final=True)
                raise _Refused(self._cut_short())
            if len(starts) > 1:  # every item but the last is complete
                self._parse(buffer[:starts[-1]], starts[:-1], final=False)
                self.line += buffer.count(b"\n", 0, starts[-1])
                buffer = buffer[starts[-1]:]
            block = f.read(BLOCK)
            buffer += block

    def _starts(self, text: bytes) -> list[int]:
        return [m.start() for m in self.item_start.finditer(text)]

    def _parse(self, text: bytes, starts: list[int], *, final: bool) -> None:
        """Parse the items of ``text``, which begin at ``starts``; ``final``: the file ends in them."""
        if not starts or starts[0] != 0:
            if text.strip():
                raise _NotTheLayout
            return
        for first in range(0, len(starts), YAML_ITEMS_PER_PIECE):
            last = min(first + YAML_ITEMS_PER_PIECE, len(starts))
            piece = text[starts[first]:starts[last]] if last < len(starts) else text[starts[first]:]
            if self.skip_managed_fields:
                piece = _without_managed_fields(piece, self.indent)
            try:
                # the file is refused if it ends in these items: read them without the fast reader,
                # whose complaints about a cut item (on standard error) would only add noise
                docs = yaml_documents(piece, self.file, fast=not (final and last == len(starts)))
            except (ManifestError, UnicodeDecodeError, RecursionError):
                docs = []
            parsed = docs[0][1] if len(docs) == 1 else None
            if not isinstance(parsed, list) or len(parsed) != last - first:
                self._diagnose(text, starts[first:last], final=final)
                raise _NotTheLayout
            for item in parsed:
                self.tidy(item)
            self.items.extend(parsed)

    def _diagnose(self, text: bytes, starts: list[int], *, final: bool) -> None:
        """Parse each item at ``starts`` (of ``text``, the first the next of the List's) alone, and refuse
        the file at the first that does not parse, unless the text after it might mend it."""
        for k, start in enumerate(starts):
            end = starts[k + 1] if k + 1 < len(starts) else len(text)
            item = text[start:end]
            ends_file = final and end == len(text)
            try:
                docs = yaml_documents(item, self.file, fast=False)  # the general reader words the errors
            except UnicodeDecodeError as exc:
                error = ManifestError(f"cannot read file: {exc}", file=self.file)
            except ManifestError as exc:
                error = exc
            else:
                if len(docs) != 1 or not isinstance(docs[0][1], list) or len(docs[0][1]) != 1:
                    raise _NotTheLayout
                continue
            refusal = item_refusal(error, item, self.line + text.count(b"\n", 0, start), index=len(self.items) + k,
                                   indent=self.indent, final=final, ends_file=ends_file)
            if refusal is None:
                raise _NotTheLayout
            raise _Refused(refusal)

    def _cut_short(self) -> ManifestError:
        """The error for a file that ends among its items, every one of which parses."""
        what = "the file ends after this item, without the List's closing `kind: List`: it looks cut short"
        if not self.items:
            return ManifestError(what.replace("after this item", "before any item"), file=self.file, document=1,
                                 path="items")
        return ManifestError(what, file=self.file, document=1, path=f"items[{len(self.items) - 1}]",
                             object_ref=object_ref(self.items[-1]) or None)

    def _rest(self, tail: bytes) -> dict[str, Any]:
        """The List's fields after ``items``, from ``tail`` (which starts on the file's line ``self.line``)."""
        after = f"after the last item (items[{len(self.items) - 1}])" if self.items else "after `items:`"
        try:
            docs = yaml_documents(b"apiVersion: v1\n" + tail, self.file)
        except ManifestError as exc:
            if "undefined alias" in exc.message:
                raise _NotTheLayout from exc
            raise _Refused(ManifestError(f"{shifted(exc.message, self.line - 2)} (in the List's fields {after}: "
                                         "the file looks cut short)", file=self.file, document=1)) from exc
        rest = docs[0][1] if len(docs) == 1 else None
        if not isinstance(rest, dict) or "items" in rest:
            raise _NotTheLayout
        kind = rest.get("kind")
        if kind == "List" and isinstance(rest.get("metadata") or {}, dict):
            return rest
        if kind is None or (isinstance(kind, str) and "List".startswith(kind)):  # "List" with its metadata cut
            raise _Refused(ManifestError(f"the List's fields {after} end before `kind: List` and its metadata: the "
                                         "file looks cut short", file=self.file, document=1))
        raise _NotTheLayout


def _managed_fields_layout(indent: int) -> tuple[re.Pattern[bytes], bytes, re.Pattern[bytes]]:
    """For items whose dashes are at column ``indent``: an item's ``metadata.managedFields`` as kubectl
    writes it (the key indented by ``indent`` + 4, the metadata's fields, then the list's entries,
    each line either an entry's first (``- `` at that column) or indented 2 further or more: YAML
    indents what is inside an entry, multi-line values included, further); the line that opens an
    item's metadata; and a line indented by ``indent`` + 2 or less (an item's own field, or the next
    item)."""
    field, inside = b" " * (indent + 4), b" " * (indent + 6)
    return (re.compile(rb"\n%smanagedFields:\n(?:%s- [^\n]*\n|%s[^\n]*\n)*" % (field, field, inside)),
            b"\n%smetadata:\n" % (b" " * (indent + 2)), re.compile(rb"\n {0,%d}[^ \n]" % (indent + 2)))


_MANAGED_FIELDS_LAYOUTS = {indent: _managed_fields_layout(indent) for indent in (0, 2)}


def _without_managed_fields(piece: bytes, indent: int = 0) -> bytes:
    """``piece`` (items of a kubectl List, their dashes at column ``indent``) without the items'
    ``metadata.managedFields``: which manager wrote which field, nearly half of a dump's YAML and
    read by nothing, cut out before the text is checked and parsed. A managedFields key is cut only
    where it is a field of an item's metadata: the last line indented by ``indent`` + 2 before it
    opens the metadata."""
    managed_fields, metadata_line, shallow_line = _MANAGED_FIELDS_LAYOUTS[indent]
    kept: list[bytes] = []
    at = 0
    for found in managed_fields.finditer(piece):
        start = found.start()
        metadata = piece.rfind(metadata_line, at, start + 1)
        if metadata < 0 or shallow_line.search(piece, metadata + len(metadata_line) - 1, start + 1):
            continue
        kept.append(piece[at:start + 1])
        at = found.end()
    if not kept:
        return piece
    kept.append(piece[at:])
    return b"".join(kept)
