"""The fast YAML reader (rapidyaml + orjson) against the general one (PyYAML, YAML 1.1): whenever
the fast reader is allowed on a text, both give the same objects, types included."""

from __future__ import annotations

import gc
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api import manifest_text
from kubesched.api.errors import ManifestError
from kubesched.api.manifest_text import YamlLoader, json_lines, plain_yaml, yaml_documents
from kubesched.testkit.dumps.cluster import ClusterDump


def _general(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=YamlLoader))


def _fast(text: str) -> list[Any]:
    return [obj for _, obj in manifest_text._fast_yaml_documents(text.encode())]


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (1 == 1.0 == True would hide a difference)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


# scalars written plain, as people write them by hand: YAML 1.1 and 1.2 differ on many of these
PLAIN = ["1", "-1", "+1", "0", "-0", "00", "017", "0o17", "0x1F", "0b101", "1_000", "1:20", "1:20.5", "1.5",
         "1.", ".5", "1e3", "1.0e+3", "1E-3", "12345678901234567890123", "9223372036854775807", ".inf",
         "-.inf", ".nan", "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "yes", "Yes", "no",
         "NO", "on", "Off", "y", "n", "2026-11-06T12:10:00Z", "2001-12-14", "abc", "100m", "64Gi",
         "10.244.1.0/24", "a b", "a:b", "-", "--", "x-y", "v1.28.7", "=", "<<", "é", "a #b", "1 2", "1.2", "1.2.3", 'a"b', "x'y", "k8s.io/a", ".", "-.", "._5", "+.", ".e3", "1_", "_1"]
QUOTED = ["'1'", '"yes"', "'a: b'", '"\\u00e9"', "'it''s'", '"tab\\tand\\nnewline"', '"\\x41"', "''", '""']
BLOCK = ["|\n{i}  line one\n{i}  line two\n", "|-\n{i}  kept\n", "|+\n{i}  kept\n\n", ">\n{i}  folded\n{i}  text\n",
         ">-\n{i}  folded\n", "|2\n{i}    indented\n"]


@st.composite
def yaml_texts(draw: st.DrawFn) -> str:
    # each text draws on a few scalars and keys only, so that many texts are ones the fast reader may take
    scalar = st.sampled_from(draw(st.lists(st.sampled_from(PLAIN + QUOTED), min_size=1, max_size=4)))
    keys = st.sampled_from(draw(st.lists(st.sampled_from(["a", "b", "name", "yes", "1", "true", "on", "x y", "'q'",
                                                          "k8s.io/x", "-a", ".b", ".", "f:app", "k:{\"a\"}"]), min_size=1, max_size=3)))

    def value(depth: int, indent: str) -> str:
        kind = draw(st.sampled_from(["scalar", "scalar", "block", "map", "seq", "flow", "empty"] if depth < 3
                                    else ["scalar", "empty"]))
        if kind == "scalar":
            return " " + draw(scalar) + "\n"
        if kind == "block":
            return " " + draw(st.sampled_from(BLOCK)).format(i=indent)
        if kind == "empty":
            return draw(st.sampled_from(["\n", " {}\n", " []\n"]))
        if kind == "flow":
            return " [" + ", ".join(draw(st.lists(scalar, max_size=3))) + "]\n"
        if kind == "map":
            return "\n" + mapping(depth + 1, indent + "  ")
        items = draw(st.lists(st.just(0), min_size=1, max_size=3))
        return "\n" + "".join(f"{indent}  -" + value(depth + 1, indent + "    ") for _ in items)

    def mapping(depth: int, indent: str) -> str:
        names = draw(st.lists(keys, min_size=1, max_size=4))
        return "".join(f"{indent}{name}:" + value(depth, indent) for name in names)

    docs = draw(st.lists(st.just(0), min_size=1, max_size=3))
    return "---\n".join(mapping(0, "") for _ in docs)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(yaml_texts())
def test_the_fast_reader_reads_what_it_is_allowed_to_as_the_general_one(text: str) -> None:
    try:
        expected = _general(text)
    except yaml.YAMLError:
        return  # invalid YAML: the general reader words the error in any case
    if not plain_yaml(text.encode()):
        return
    try:
        got = _fast(text)
    except Exception:  # noqa: BLE001 - the general reader takes over: not a difference
        return
    assert _same(got, expected), (text, got, expected)


@pytest.mark.parametrize("scalar", PLAIN + QUOTED)
def test_each_scalar_as_a_value_a_key_and_a_list_item(scalar: str) -> None:
    for text in (f"k: {scalar}\n", f"{scalar}: v\n", f"- {scalar}\n- x\n", f"k:\n- {scalar}\n"):
        try:
            expected = _general(text)
        except yaml.YAMLError:
            continue
        if plain_yaml(text.encode()):
            assert _same(_fast(text), expected), text


def test_kubectl_dumps_take_the_fast_reader(tmp_path: Path) -> None:
    dump = ClusterDump()
    dump.system_classes()
    for i in range(3):
        dump.node(f"node-{i}", taints=[{"effect": "NoSchedule", "key": "gpu", "value": "true"}] if i == 2 else None)
    dump.deployment("web", 3, ["node-0", "node-1", None], namespace="shop")
    dump.daemonset_pods("kube-proxy")
    dump.pdb("web", "shop", {"app": "web"}, min_available=2)
    listing = dump.as_list(with_workloads=True)
    listing["items"][0]["metadata"]["annotations"]["note"] = "yes"  # kubectl quotes such strings
    listing["items"][0]["metadata"]["annotations"]["multi"] = "line one\nline two"
    text = yaml.safe_dump(json.loads(json.dumps(listing)))  # no anchors: kubectl writes none
    assert plain_yaml(text.encode())
    assert _same(_fast(text), _general(text))
    assert _same(yaml_documents(text, "dump.yaml")[0][1], json.loads(json.dumps(listing, sort_keys=True)))


def test_anchors_and_yaml_11_words_go_to_the_general_reader() -> None:
    for text in ("a: &x [1]\nb: *x\n", "a: yes\n", "a: 017\n", "1: a\n", "a: !!str 1\n", "<<: {a: 1}\n",
                 "a:\n\t- 1\n", "a: [b, c]\n"):
        assert not plain_yaml(text.encode()), text
        if "\t" not in text:  # PyYAML refuses tabs in indentation, with a message naming the line
            assert _same([obj for _, obj in yaml_documents(text, "f.yaml")], _general(text))


def test_empty_documents_keep_their_numbers() -> None:
    text = "a: 1\n---\n# nothing\n---\nb: 2\n"
    assert yaml_documents(text, "f.yaml") == [(1, {"a": 1}), (2, None), (3, {"b": 2})]
    assert yaml_documents("", "f.yaml") == []
    assert yaml_documents("# only a comment\n", "f.yaml") == []


def test_json_lines_name_the_line_of_an_error() -> None:
    data = b'{"kind": "Pod"}\n\n{"kind": "Node"}\n{"kind": \n'
    with pytest.raises(ManifestError) as err:
        list(json_lines(data, "dump.jsonl"))
    assert err.value.document == 4 and "JSON Lines syntax error" in err.value.message
    assert list(json_lines(data.rsplit(b"\n", 2)[0], "dump.jsonl")) == [(1, {"kind": "Pod"}), (3, {"kind": "Node"})]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the process's memory from /proc")
def test_the_fast_reader_gives_back_the_memory_of_what_it_read() -> None:
    """Reading a dump piece by piece must not keep a copy of each piece: a 150 000-pod dump is read
    in thousands of pieces. (rapidyaml's emit_json_malloc never frees the JSON text it writes.)"""
    dump = ClusterDump()
    for i in range(20):
        dump.node(f"node-{i}")
    dump.deployment("web", 400, [f"node-{i % 20}" for i in range(400)], namespace="shop")
    text = yaml.safe_dump(json.loads(json.dumps(dump.as_list(with_workloads=True)))).encode()
    assert plain_yaml(text) and len(text) > 1_000_000

    def resident() -> int:
        line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmRSS"))
        return int(line.split()[1]) * 1024

    for _ in range(10):  # the first reads settle the allocator (its arenas grow to their working size)
        yaml_documents(text, "dump.yaml")
    gc.collect()
    before = resident()
    for _ in range(40):
        yaml_documents(text, "dump.yaml")
    gc.collect()
    # kept copies would grow by ~1.4 x 40 x the text; a settled allocator by a fraction of that
    assert resident() - before < 15 * len(text)
