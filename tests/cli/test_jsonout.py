"""JSON output: byte for byte what ``json.dumps(document, indent=2)`` gives, whichever encoder writes it."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.cli import jsonout
from kubesched.cli.jsonout import write_json

FLAT = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                 st.text(max_size=8), st.sampled_from(["Running", "é", "\x7f", "\x00\b\f\n\r\t\"\\/", "\u2028"]))
RECORD = st.dictionaries(st.text(max_size=6), FLAT, max_size=5)


def _written(document: Any) -> str:
    out = io.StringIO()
    write_json(document, out)
    return out.getvalue()


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=10), RECORD, max_size=12),
       st.dictionaries(st.text(max_size=6), st.one_of(FLAT, st.floats(), st.lists(FLAT, max_size=3)), max_size=4))
def test_tables_of_records_are_written_as_json_dumps_writes_them(table: dict[str, Any], other: dict[str, Any]) -> None:
    # a tiny threshold sends every table to the fast path (where orjson would write it apart it
    # hands it back: non-ASCII text, integers past 64 bits)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonout, "_FAST_ABOVE", 0)
        document = {"scenario": "s", "pods": table, **{f"x{k}": v for k, v in other.items()}, "end": [1.5, 1e-05]}
        assert _written(document) == json.dumps(document, indent=2) + "\n"


def test_a_big_result_takes_the_fast_path_and_reads_the_same() -> None:
    pods = {f"shop/web-{i}": {"node": f"node-{i % 7}", "phase": "Running", "priority": i, "nominatedNodeName": None,
                              "priorityClassName": None, "ready": True} for i in range(3000)}
    document = {"scenario": "big", "seed": 0, "endTime": 12.5, "pods": pods, "events": [{"time": 1e-05}]}
    assert jsonout._is_table(pods) and not jsonout._is_table(document["events"])
    assert _written(document) == json.dumps(document, indent=2) + "\n"
    pods["shop/web-1"]["node"] = "nœud"  # not ASCII: Python's encoder writes the table
    assert _written(document) == json.dumps(document, indent=2) + "\n"


def test_documents_without_a_table_and_empty_ones() -> None:
    for document in ({}, [], {"a": {}}, {"pods": {}}, [{"a": 1}], "text"):
        assert _written(document) == json.dumps(document, indent=2) + "\n"
