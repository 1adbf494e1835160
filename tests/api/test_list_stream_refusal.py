"""kubectl YAML List dumps read item by item: the same objects as the whole document, odd but valid
YAML inside items read alike, and a broken (cut short) dump refused as it is read, naming the file
and the item, without reading the whole file again."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kubesched.api import list_stream, loader
from kubesched.api.errors import ManifestError
from kubesched.api.list_stream import read_list_items
from kubesched.api.manifest_text import yaml_documents
from kubesched.cli.main import cli
from kubesched.testkit.dumps.cluster import ClusterDump, small_eks_cluster


def _dump(tmp_path: Path, name: str = "dump.yaml") -> Path:
    dump, _ = small_eks_cluster()
    return dump.write(tmp_path / name, "yaml")


def _whole(data: bytes) -> dict[str, Any]:
    docs = yaml_documents(data, "whole")
    assert len(docs) == 1
    obj: dict[str, Any] = docs[0][1]
    return obj


def _indented(data: bytes) -> bytes:
    """The same List with its items' sequence indented by 2 under ``items:``."""
    head, _, rest = data.partition(b"items:\n")
    items, _, tail = rest.rpartition(b"kind: List\n")
    indented = b"".join(b"  " + line if line.strip() else line for line in items.splitlines(keepends=True))
    return head + b"items:\n" + indented + b"kind: List\n" + tail


def _small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 4 KB and 3 items a piece: items cut across blocks, several pieces per dump."""
    monkeypatch.setattr(list_stream, "BLOCK", 4096)
    monkeypatch.setattr(list_stream, "YAML_ITEMS_PER_PIECE", 3)


def _never_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make reading a file as one YAML document fail the test: the List must be read item by item."""
    def whole(*_: Any) -> Any:
        raise AssertionError("the file was read again as one document")
    monkeypatch.setattr(loader, "yaml_documents", whole)


@pytest.mark.parametrize("indent", [0, 2])
def test_a_dump_read_item_by_item_equals_the_whole_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, indent: int) -> None:
    _small_pieces(monkeypatch)
    path = _dump(tmp_path)
    if indent:
        path.write_bytes(_indented(path.read_bytes()))
    data = path.read_bytes()
    assert (b"\n  - apiVersion" in data) == bool(indent)
    whole = _whole(data)
    tidied: list[Any] = []
    listed = read_list_items(path, tidied.append)
    assert listed is not None
    items, rest = listed
    assert len(items) == 19 and items == whole["items"] and tidied == items
    assert rest == {k: v for k, v in whole.items() if k != "items"}
    # the items' managedFields cut out of the text before it is parsed, as the loader reads a dump
    skipped = read_list_items(path, lambda _: None, skip_managed_fields=True)
    assert skipped is not None
    assert all(item["metadata"].pop("managedFields") for item in whole["items"])
    assert skipped[0] == whole["items"]


def _cli(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _refused(result: Result, *words: str) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    for word in words:
        assert word in result.output, result.output
    return result.output


def _cut(tmp_path: Path, data: bytes, size: int) -> Path:
    path = tmp_path / "cut.yaml"
    path.write_bytes(data[:size])
    return path


def _item_starts(data: bytes) -> list[int]:
    return [m.start() for m in re.finditer(rb"^- ", data, re.MULTILINE)]


@pytest.mark.parametrize("indent", [0, 2])
@pytest.mark.parametrize("where", [0.13, 0.5, 0.77, 0.9])
def test_a_dump_cut_inside_an_item_is_refused_naming_the_file_and_the_item(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, indent: int, where: float) -> None:
    _small_pieces(monkeypatch)
    data = _dump(tmp_path).read_bytes()
    if indent:
        data = _indented(data)
    size = int(len(data) * where)
    starts = [m.start() for m in re.finditer(rb"^ {%d}- " % indent, data, re.MULTILINE)]
    index = sum(1 for s in starts if s < size) - 1  # the item the cut is in
    whole = _whole(data)["items"][index]
    path = _cut(tmp_path, data, size)
    _never_whole(monkeypatch)
    with pytest.raises(ManifestError) as caught:
        read_list_items(path, lambda _: None)
    error = caught.value
    assert error.file == str(path) and error.document == 1 and error.path == f"items[{index}]"
    assert "cut short" in error.message
    # kind and name as far as the cut item shows them (kind and metadata come first in kubectl's order)
    assert error.object_ref is None or error.object_ref.startswith(whole["kind"])
    output = _refused(_cli("simulate", str(path)), str(path), f"items[{index}]", "cut short")
    assert "document 1" in output


def test_a_parse_error_names_the_line_of_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _small_pieces(monkeypatch)
    data = _dump(tmp_path).read_bytes()
    lines = data.split(b"\n")
    # the last line of the file's 6th item: a quoted string left open, where the file is cut
    sixth = _item_starts(data)[6]
    line = data.count(b"\n", 0, sixth)  # 1-based: the 6th item's last line
    cut = b"\n".join(lines[:line - 1]) + b'\n  kind: "Po'
    path = _cut(tmp_path, cut, len(cut))
    with pytest.raises(ManifestError) as caught:
        read_list_items(path, lambda _: None)
    assert caught.value.path == "items[5]"
    assert caught.value.message.startswith(f"line {line}, column 12: YAML syntax error: ")


def test_a_dump_cut_between_items_is_refused_naming_the_last_item(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _small_pieces(monkeypatch)
    data = _dump(tmp_path).read_bytes()
    starts = _item_starts(data)
    whole = _whole(data)["items"]
    _never_whole(monkeypatch)
    for index in (1, 7, len(starts) - 1):
        path = _cut(tmp_path, data, starts[index])
        with pytest.raises(ManifestError) as caught:
            read_list_items(path, lambda _: None)
        ref = f"{whole[index - 1]['kind']} "
        assert caught.value.path == f"items[{index - 1}]" and (caught.value.object_ref or "").startswith(ref)
        assert "without the List's closing `kind: List`" in caught.value.message
        _refused(_cli("simulate", str(path)), str(path), f"items[{index - 1}]", "cut short")


@pytest.mark.parametrize("keep", ["", "k", "kind:", "kind: Li", "kind: List\nmeta", "kind: List\nmetadata:\n  resourceVe",
                                  "kind: List\nmetadata:\n  resourceVersion: '"])
def test_a_dump_cut_in_the_closing_fields_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      keep: str) -> None:
    _small_pieces(monkeypatch)
    data = _dump(tmp_path).read_bytes()
    closing = data.rindex(b"kind: List\n")
    path = _cut(tmp_path, data[:closing] + keep.encode(), closing + len(keep))
    _never_whole(monkeypatch)
    _refused(_cli("simulate", str(path)), str(path), "cut short")


@pytest.mark.parametrize("keep", ["kind: List\n", "kind: List\nmetadata:\n", "kind: List\nmetadata:\n  resourceVersion: "])
def test_a_dump_cut_after_its_kind_reads_as_the_whole_document_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: str) -> None:
    _small_pieces(monkeypatch)
    data = _dump(tmp_path).read_bytes()
    closing = data.rindex(b"kind: List\n")
    cut = data[:closing] + keep.encode()
    path = _cut(tmp_path, cut, len(cut))
    listed = read_list_items(path, lambda _: None)
    assert listed is not None and listed[0] == _whole(cut)["items"]


def test_a_dump_cut_right_after_items_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _small_pieces(monkeypatch)
    path = _cut(tmp_path, b"apiVersion: v1\nitems:\n", 22)
    _refused(_cli("simulate", str(path)), str(path), "items: the file ends right after `items:`")


def test_a_broken_item_in_the_middle_is_refused_without_reading_the_rest(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _small_pieces(monkeypatch)
    data = _dump(tmp_path).read_bytes()
    line = data.count(b"\n", 0, _item_starts(data)[5])  # the 5th item's last line, indented one space too few
    lines = data.split(b"\n")
    lines[line - 1] = lines[line - 1][1:]
    path = tmp_path / "bad.yaml"
    path.write_bytes(b"\n".join(lines))
    seen: list[Any] = []
    _never_whole(monkeypatch)
    with pytest.raises(ManifestError) as caught:
        read_list_items(path, seen.append)
    assert caught.value.path == "items[4]" and caught.value.message.startswith(f"line {line}, column ")
    assert caught.value.object_ref == "Pod kube-system/" + _whole(data)["items"][4]["metadata"]["name"]
    assert len(seen) <= 4  # refused before any item after it was parsed


def _namespace(name: str, annotations: str) -> str:
    annotations = annotations.replace("{name}", name)
    return (f"- apiVersion: v1\n  kind: Namespace\n  metadata:\n    annotations:\n{annotations}"
            f"    name: {name}\n")


@pytest.mark.parametrize("annotations", [
    "      a: |\n        - not an item\n        -\n        kind: List\n",  # a block scalar of lines like the layout's
    "      a: |-\n        two\n\n        lines\n      b: >\n        folded\n        - text\n",
    "      a: '- quoted: with a dash'\n      b: \"x\\n- y\"\n",
    "      a: \"a long string\n        - folded over lines\"\n",  # a quoted string over lines
    "      a: &v{name} shared\n      b: *v{name}\n",  # an anchor and its alias inside one item
    "      a: yes\n      b: 0x1F\n      c: ~\n",  # YAML 1.1 scalars (the general reader's)
    "      # a comment\n      a: b\n",
])
def test_odd_but_valid_yaml_inside_items_reads_as_the_whole_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, annotations: str) -> None:
    _small_pieces(monkeypatch)
    text = ("apiVersion: v1\nitems:\n" + _namespace("a", annotations) + "# between items\n"
            + _namespace("b", annotations) + "kind: List\nmetadata:\n  resourceVersion: ''\n").encode()
    path = tmp_path / "odd.yaml"
    path.write_bytes(text)
    listed = read_list_items(path, lambda _: None)
    assert listed is not None
    assert listed[0] == _whole(text)["items"] and len(listed[0]) == 2
    if "yes" not in annotations:  # (annotations must be strings to be loaded)
        assert [o["metadata"]["name"] for o in loader.load_scenario(path).objects] == ["a", "b"]


@pytest.mark.parametrize("text", [
    # an alias to another item's anchor
    "apiVersion: v1\nitems:\n- &x {apiVersion: v1, kind: Namespace, metadata: {name: a}}\n- *x\nkind: List\n",
    # a quoted string whose next line looks like an item
    "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata:\n    annotations:\n"
    "      a: \"x\n- y\"\n    name: a\nkind: List\n",
])
def test_items_that_the_next_item_completes_are_read_as_one_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     text: str) -> None:
    _small_pieces(monkeypatch)
    monkeypatch.setattr(list_stream, "YAML_ITEMS_PER_PIECE", 1)  # each item parsed alone
    path = tmp_path / "f.yaml"
    path.write_text(text)
    assert read_list_items(path, lambda _: None) is None  # not refused: the whole document decides
    assert [o["metadata"]["name"] for o in loader.load_scenario(path).objects] in (["a", "a"], ["a"])


def test_a_generated_dump_with_workloads_reads_the_same_in_any_piece_size(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _small_pieces(monkeypatch)
    dump = ClusterDump()
    dump.system_classes()
    for i in range(4):
        dump.node(f"node-{i}")
    dump.deployment("web", 5, ["node-0", "node-1", "node-2", None, "node-3"], namespace="shop")
    dump.daemonset_pods("kube-proxy")
    path = dump.write(tmp_path / "d.yaml", "yaml")
    whole = _whole(path.read_bytes())["items"]
    for per_piece in (1, 2, 100):
        monkeypatch.setattr(list_stream, "YAML_ITEMS_PER_PIECE", per_piece)
        listed = read_list_items(path, lambda _: None)
        assert listed is not None and listed[0] == whole
