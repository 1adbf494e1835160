"""kubectl's List dumps read item by item give what reading the whole document gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api import list_stream
from kubesched.api.list_stream import read_list_items
from kubesched.api.loader import load_scenario
from kubesched.api.manifest_text import YamlLoader
from kubesched.testkit.dumps.cluster import ClusterDump


def _dump(annotations: list[str]) -> dict[str, Any]:
    dump = ClusterDump()
    dump.system_classes()
    for i in range(3):
        dump.node(f"node-{i}")
    dump.deployment("web", 4, ["node-0", "node-1", "node-2", None], namespace="shop")
    dump.daemonset_pods("kube-proxy")
    dump.pdb("web", "shop", {"app": "web"}, min_available=2)
    listing = dump.as_list(with_workloads=True)
    for item, text in zip(listing["items"], annotations):
        item["metadata"].setdefault("annotations", {})["note"] = text
    return json.loads(json.dumps(listing))  # no shared objects: kubectl writes no anchors


def _write(tmp_path: Path, listing: dict[str, Any], fmt: str) -> Path:
    path = tmp_path / f"dump.{fmt}"
    if fmt == "json":
        path.write_text(json.dumps(listing, indent=4))  # kubectl -o json
    else:
        path.write_text(yaml.safe_dump(listing))  # kubectl -o yaml: keys sorted, block style
    return path


def _whole(path: Path) -> list[Any]:
    text = path.read_text()
    doc = json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=YamlLoader)
    return list(doc["items"])


@pytest.mark.parametrize("fmt", ["json", "yaml"])
@pytest.mark.parametrize("block", [64, 1000, list_stream.BLOCK])
def test_items_read_one_by_one_equal_the_whole_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str,
                                                    block: int) -> None:
    monkeypatch.setattr(list_stream, "BLOCK", block)  # items cut across blocks
    monkeypatch.setattr(list_stream, "YAML_ITEMS_PER_PIECE", 3)
    path = _write(tmp_path, _dump(["plain", "two\nlines", "- looks like an item\n- and another", "},\n}"]), fmt)
    tidied = []
    listed = read_list_items(path, tidied.append)
    assert listed is not None
    items, rest = listed
    assert items == _whole(path) and tidied == items
    assert rest == {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}}


#: pieces of annotation text: characters YAML and JSON treat specially, and lines that look like
#: the layout the readers cut at
_PIECES = st.sampled_from([*"ab -:{}[],#'\"\n\\é\t", "\n    managedFields:\n    - ", "\n  metadata:\n"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(_PIECES, max_size=12).map("".join), min_size=1, max_size=6))
def test_any_annotation_text_reads_the_same(tmp_path: Path, texts: list[str]) -> None:
    for fmt in ("json", "yaml"):
        path = _write(tmp_path, _dump(texts), fmt)
        listed = read_list_items(path, lambda _: None)
        assert listed is not None, fmt
        assert listed[0] == _whole(path), fmt
        if fmt == "yaml":
            skipped = read_list_items(path, lambda _: None, skip_managed_fields=True)
            assert skipped is not None and skipped[0] == _without_managed_fields(listed[0])


@pytest.mark.parametrize("text", [
    '{"apiVersion": "v1", "items": [], "kind": "List"}',  # one line: not kubectl's layout
    "apiVersion: v1\nkind: List\nitems: []\n",
    "apiVersion: v1\nitems:\n- a: 1\n---\nkind: Pod\n",  # a second document after the List
])
def test_other_layouts_are_read_whole(tmp_path: Path, text: str) -> None:
    path = tmp_path / ("f.json" if text.startswith("{") else "f.yaml")
    path.write_text(text)
    assert read_list_items(path, lambda _: None) is None


def test_an_empty_list(tmp_path: Path) -> None:
    path = _write(tmp_path, {"apiVersion": "v1", "items": [], "kind": "List", "metadata": {"resourceVersion": ""}},
                  "json")
    assert read_list_items(path, lambda _: None) == ([], {"apiVersion": "v1", "kind": "List",
                                                          "metadata": {"resourceVersion": ""}})


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_the_loader_reads_a_dump_item_by_item_without_managed_fields(tmp_path: Path, fmt: str) -> None:
    listing = _dump(["x"])
    path = _write(tmp_path, listing, fmt)
    scenario = load_scenario(path)
    assert len(scenario.objects) == len(listing["items"])
    assert all("managedFields" not in o["metadata"] for o in scenario.objects)
    assert [o["metadata"]["uid"] for o in scenario.objects] == [o["metadata"]["uid"] for o in listing["items"]]


def test_an_alias_across_pieces_sends_the_file_to_the_whole_document_reader(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(list_stream, "YAML_ITEMS_PER_PIECE", 1)
    path = tmp_path / "f.yaml"
    path.write_text("apiVersion: v1\nitems:\n- &x {apiVersion: v1, kind: Namespace, metadata: {name: a}}\n- *x\n"
                    "kind: List\n")
    assert read_list_items(path, lambda _: None) is None
    assert [o["metadata"]["name"] for o in load_scenario(path).objects] == ["a", "a"]


def _without_managed_fields(items: list[Any]) -> list[Any]:
    out = json.loads(json.dumps(items))
    for item in out:
        item["metadata"].pop("managedFields", None)
    return out


@pytest.mark.parametrize("block", [64, list_stream.BLOCK])
def test_yaml_items_read_without_their_managed_fields_equal_the_whole_list_without_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    monkeypatch.setattr(list_stream, "BLOCK", block)
    monkeypatch.setattr(list_stream, "YAML_ITEMS_PER_PIECE", 3)
    listing = _dump(["plain", "managedFields:\n- x", "two\nlines"])
    assert all(item["metadata"].get("managedFields") for item in listing["items"][:3])
    # a field of that name elsewhere (a kind kubesched does not know) is data, not the metadata's
    listing["items"][1]["spec"]["managedFields"] = [{"apiVersion": "v1", "manager": "me"}]
    # the metadata's last field (kubectl sorts keys: not from kubectl, but read right all the same)
    meta = listing["items"][2]["metadata"]
    listing["items"][2]["metadata"] = {**{k: v for k, v in meta.items() if k != "managedFields"},
                                       "zz": "z", "managedFields": meta["managedFields"]}
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(listing, sort_keys=False))
    listed = read_list_items(path, lambda _: None, skip_managed_fields=True)
    assert listed is not None
    whole = _whole(path)
    assert listed[0] == _without_managed_fields(whole)
    assert listed[0][1]["spec"]["managedFields"] == [{"apiVersion": "v1", "manager": "me"}]


def _both_ways(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """What the JSON List reader gives on the file mapped into memory, and read block by block."""
    tidied: list[Any] = []
    with monkeypatch.context() as m:
        m.setattr(list_stream, "BLOCK", 64)  # what was parsed handed back to the system as it goes
        mapped = read_list_items(path, tidied.append)
    with monkeypatch.context() as m:
        m.setattr(list_stream, "_mapped", lambda _f: None)
        m.setattr(list_stream, "BLOCK", 100)  # items cut across blocks
        buffered = read_list_items(path, lambda _: None)
    if mapped is not None:
        assert tidied == mapped[0]
    return mapped, buffered


@pytest.mark.parametrize("cut", [None, -1, -40, -300, 600])
def test_a_mapped_json_list_reads_as_one_read_block_by_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             cut: int | None) -> None:
    """The mapped reader (a regular file) against the block reader (a pipe, or a file that cannot be
    mapped): the same items and List fields, and the same answer (None: read as one document) for
    a file cut short or cut anywhere."""
    text = json.dumps(_dump(["plain", "},\n}", '"\n        },\n'] + ["x"] * 20), indent=4)
    path = tmp_path / "dump.json"
    path.write_text(text if cut is None else text[:cut])
    mapped, buffered = _both_ways(path, monkeypatch)
    assert mapped == buffered
    assert (mapped is not None) == (cut is None)
    if mapped is not None:
        assert mapped[0] == _whole(path)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(_PIECES, max_size=12).map("".join), min_size=1, max_size=6), st.integers(0, 3))
def test_any_json_list_reads_the_same_mapped_or_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    texts: list[str], indent: int) -> None:
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(_dump(texts), indent=indent * 2))  # 4: kubectl's layout, others not
    mapped, buffered = _both_ways(path, monkeypatch)
    assert mapped == buffered
    assert (mapped is not None) == (indent == 2)


def test_an_empty_json_file_is_not_mapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "dump.json"
    path.write_bytes(b"")
    assert _both_ways(path, monkeypatch) == (None, None)
