"""Why a kubectl YAML List dump read item by item is refused, worded for the user.

A List dump is read a run of items at a time (:mod:`kubesched.api.list_stream`). When a run does not
parse, each of its items is parsed alone, by the same readers, to find the first one that does not;
what that item's error means depends on where it is:

* the file ends inside that item (no List fields after it): the file is broken whatever the rest
  says, typically cut short by a copy or a full disk; it is refused, naming the item;
* the error lies inside the item's text: no text after it can mend that, and it is refused too;
* the error is at the very end of the item's text (a quoted string or a flow collection left open)
  or an alias to an anchor of another item: the text that follows might close it (kubectl never
  writes either, but a hand-made file may), so the file is read as one document instead, by the
  readers that then word any error.

Line numbers are the file's: an item's error is found on the item's own text (``managedFields``
included) and shifted by the line the item starts on.
"""

from __future__ import annotations

import re

from kubesched.api.errors import ManifestError
from kubesched.api.validation import object_ref

#: ``line L, column C: ...``, as the YAML readers word a syntax error
_AT_LINE = re.compile(r"line (\d+), column (\d+): ")
_QUOTED = re.compile(rb"""^(?:'((?:[^']|'')*)'|"([^"\\]*)")$""")

CUT_SHORT = "the file ends inside this item: it looks cut short"


def _scalar(text: bytes) -> str:
    """A one-line scalar as kubectl writes a kind, name or namespace (plain or quoted)."""
    text = text.strip()
    quoted = _QUOTED.match(text)
    if quoted is not None:
        text = quoted.group(1).replace(b"''", b"'") if quoted.group(1) is not None else quoted.group(2)
    return text.decode("utf-8", "replace")


def item_ref(text: bytes, indent: int) -> str:
    """``"Pod ns/name"`` of the item whose text (``- `` at column ``indent`` first) is ``text``, as far
    as its lines show (kind and metadata are near an item's start, so a cut item mostly has them);
    ``""`` when they do not show its kind."""
    own = indent + 2  # the column of the item's own fields
    lead = rb"^(?: {%d}- | {%d})" % (indent, own)
    kind = re.search(lead + rb"kind: ([^\n]+)$", text, re.MULTILINE)
    if kind is None:
        return ""
    meta: dict[str, str] = {}
    start = re.search(lead + rb"metadata:\n", text, re.MULTILINE)
    if start is not None:
        end = re.compile(rb"^ {0,%d}[^ \n]" % own, re.MULTILINE).search(text, start.end())
        block = text[start.end():end.start() if end is not None else len(text)]
        for key in ("name", "namespace"):
            found = re.search(rb"^ {%d}%s: ([^\n]+)$" % (own + 2, key.encode()), block, re.MULTILINE)
            if found is not None:
                meta[key] = _scalar(found.group(1))
    return object_ref({"kind": _scalar(kind.group(1)), "metadata": meta})


def item_refusal(error: ManifestError, text: bytes, first_line: int, *, index: int, indent: int,
                 final: bool, ends_file: bool) -> ManifestError | None:
    """The error to refuse the file with, for the item ``items[index]`` whose text (starting on the
    file's line ``first_line``) the readers refused with ``error``; None where the text after the item
    might mend it (see the module's description) and the whole document must decide. ``final``: no
    List fields follow the items (the file is broken whatever the item says); ``ends_file``: the file
    ends inside this item."""
    message = error.message
    at = _AT_LINE.match(message)
    if not final:
        if "undefined alias" in message:
            return None
        if at is not None and int(at.group(1)) > text.rstrip().count(b"\n") + 1:
            return None  # at the end of the item's text: what follows might close it
    if at is not None:
        message = f"line {first_line + int(at.group(1)) - 1}, column {at.group(2)}: {message[at.end():]}"
    if ends_file:
        message = f"{message} ({CUT_SHORT})"
    return ManifestError(message, file=error.file, document=1, path=f"items[{index}]",
                         object_ref=item_ref(text, indent) or None)


def shifted(message: str, lines: int) -> str:
    """``message`` with the line number it starts with (if any) moved on by ``lines``."""
    at = _AT_LINE.match(message)
    if at is None:
        return message
    return f"line {int(at.group(1)) + lines}, column {at.group(2)}: {message[at.end():]}"
