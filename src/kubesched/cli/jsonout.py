"""JSON documents on standard output, written as they are encoded: a result of 150 000 pods is
never one string in memory. The text is what ``json.dumps(document, indent=2)`` gives, byte for
byte (the documents' contract), followed by a newline.

Python's encoder writes indented JSON in Python (only compact JSON has its C encoder), a second
and a half for the 150 000 pod records of a big result. A top-level field that is a table of flat
records (the result's ``pods``: each a mapping of texts, integers, booleans and nulls) is written
by orjson instead, whose indented text is the same for such values once it is ASCII: orjson writes
other characters as they are where ``json.dumps`` escapes them, so any record that is not ASCII,
and every other field, goes through Python's encoder. Floats never take the fast path (the two
write some apart: ``1e-05`` and ``0.00001``). ``tests/cli/test_jsonout.py`` holds the two against
each other.
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any

import orjson

#: encoder chunks joined into one write
_CHUNKS_PER_WRITE = 8192
#: the values a flat record may hold for orjson to write it as json.dumps does
_FLAT = (str, int, bool, type(None))
#: below this many records Python's encoder is quick enough
_FAST_ABOVE = 1000


def write_json(document: Any, stream: IO[str] | None = None) -> None:
    out = sys.stdout if stream is None else stream
    tables = {key for key, value in document.items() if _is_table(value)} if isinstance(document, dict) else set()
    if tables:
        _write_fields(document, tables, out)
    else:
        _write_encoded(document, out)
    out.write("\n")
    out.flush()


def _write_fields(document: dict[str, Any], tables: set[str], out: IO[str]) -> None:
    """``document``'s fields one by one, each written at the indentation of the first level; those
    named in ``tables`` by orjson where it writes them alike."""
    out.write("{")
    for i, (key, value) in enumerate(document.items()):
        out.write(("," if i else "") + "\n  " + json.dumps(key) + ": ")
        text = _table_text(value) if key in tables else None
        if text is None:
            _write_encoded(value, out, indent="\n  ")
        else:
            out.write(text)
    out.write("\n}")


def _is_table(value: Any) -> bool:
    """A mapping of many flat records: what the fast path may write."""
    return isinstance(value, dict) and len(value) > _FAST_ABOVE and all(
        type(record) is dict and all(type(item) in _FLAT for item in record.values()) for record in value.values())


def _table_text(table: dict[str, Any]) -> str | None:
    """``json.dumps(table, indent=2)`` one level in, or None where orjson would write it apart
    (a text that is not ASCII, an integer past 64 bits, a key that is not a text)."""
    try:
        encoded = orjson.dumps(table, option=orjson.OPT_INDENT_2)
    except TypeError:  # orjson.JSONEncodeError: an integer past 64 bits, a key that is not a text
        return None
    if not encoded.isascii() or b"\x7f" in encoded:
        return None
    return encoded.decode("ascii").replace("\n", "\n  ")


def _write_encoded(value: Any, out: IO[str], indent: str = "\n") -> None:
    """``json.dumps(value, indent=2)`` as Python's encoder writes it, each line break followed by
    ``indent``'s spaces."""
    pending: list[str] = []
    for chunk in json.JSONEncoder(indent=2).iterencode(value):
        pending.append(chunk if indent == "\n" else chunk.replace("\n", indent))
        if len(pending) >= _CHUNKS_PER_WRITE:
            out.write("".join(pending))
            pending.clear()
    out.write("".join(pending))
