"""JSON documents on standard output, written as they are encoded: a result of 150 000 pods is
never one string in memory. The text is what ``json.dumps(document, indent=2)`` gives, byte for
byte (the documents' contract), followed by a newline."""

from __future__ import annotations

import json
import sys
from typing import IO, Any

#: encoder chunks joined into one write
_CHUNKS_PER_WRITE = 8192


def write_json(document: Any, stream: IO[str] | None = None) -> None:
    out = sys.stdout if stream is None else stream
    pending: list[str] = []
    for chunk in json.JSONEncoder(indent=2).iterencode(document):
        pending.append(chunk)
        if len(pending) >= _CHUNKS_PER_WRITE:
            out.write("".join(pending))
            pending.clear()
    pending.append("\n")
    out.write("".join(pending))
    out.flush()
