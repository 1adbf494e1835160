"""Hostile YAML is refused with a clear error naming the limit: nesting that would overflow the
parser's stack, and alias bombs that would expand to billions of nodes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kubesched.api.boundedyaml import MAX_DEPTH, allowed_alias_share, check_bounds
from kubesched.api.errors import ManifestError
from kubesched.api.loader import load_scenario
from kubesched.api.manifest_text import YamlLoader

POD_HEAD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i}]\n"


def test_yaml_nested_thirty_thousand_deep_is_refused_without_crashing(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text(POD_HEAD + "  x: " + "[" * 30000 + "]" * 30000 + "\n")
    # a separate process: a regression would crash the interpreter, not fail an assertion
    run = subprocess.run([sys.executable, "-m", "kubesched", "simulate", str(deep)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert f"{deep}: document 1: refused: nested more than {MAX_DEPTH} levels deep" in run.stderr


def test_json_nested_too_deep_is_refused(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"apiVersion": "v1", "kind": "Pod", "x": ' + "[" * 100000 + "]" * 100000 + "}")
    with pytest.raises(ManifestError, match="nested too deep"):
        load_scenario(deep)


def test_an_alias_bomb_is_refused(tmp_path: Path) -> None:
    lines = [POD_HEAD + "  x:", '    a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"    a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    with pytest.raises(ManifestError, match="excessive aliasing: aliases make 4,412,961,486 of its 4,412,961,535 nodes") as err:
        load_scenario(bomb)
    assert err.value.document == 1


def test_a_recursive_alias_counts_as_too_deep(tmp_path: Path) -> None:
    loop = tmp_path / "loop.yaml"
    loop.write_text(POD_HEAD + "  x: &loop [*loop]\n")
    with pytest.raises(ManifestError, match="nested more than"):
        load_scenario(loop)


def test_ordinary_anchors_and_nesting_still_load(tmp_path: Path) -> None:
    ok = tmp_path / "ok.yaml"
    ok.write_text("apiVersion: v1\nkind: List\nitems:\n"
                  "- {apiVersion: v1, kind: Node, metadata: {name: n1, labels: &labels {zone: a}},\n"
                  "   status: {allocatable: &res {cpu: '4', memory: 8Gi, pods: '110'}, capacity: *res}}\n"
                  "- {apiVersion: v1, kind: Node, metadata: {name: n2, labels: *labels},\n"
                  "   status: {allocatable: *res, capacity: *res}}\n")
    scenario = load_scenario(ok)
    assert [o["metadata"]["labels"] for o in scenario.objects] == [{"zone": "a"}, {"zone": "a"}]


def test_a_syntax_error_still_names_its_document(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}})
                   + "\n---\nkind: [unclosed\n")
    with pytest.raises(ManifestError) as err:
        load_scenario(bad)
    assert err.value.document == 2
    assert "YAML syntax error" in str(err.value)


def test_a_big_document_without_aliases_is_never_refused_for_its_size() -> None:
    # three million nodes in one List, the general reader's path (anchors nowhere): no bound applies
    text = "kind: List\nitems:\n" + "- {a: 1, b: 2, c: [x, y, z]}\n" * 400_000
    loader = YamlLoader(text)
    try:
        node = loader.get_single_node()
        check_bounds(node, 1)  # does not raise
    finally:
        loader.dispose()


def test_aliases_may_add_a_share_of_a_document_that_shrinks_as_it_grows(tmp_path: Path) -> None:
    assert allowed_alias_share(1000) == 0.99 and allowed_alias_share(400_000) == 0.99
    assert allowed_alias_share(4_000_000) == pytest.approx(0.10) and allowed_alias_share(10**9) == 0.10
    assert allowed_alias_share(2_200_000) == pytest.approx(0.545)
    # an anchor of 3 nodes used 1000 times: 3000 of 3000-odd nodes come from aliases, under 99 %? no: refused
    used = tmp_path / "reused.yaml"
    used.write_text("base: &b {cpu: '1', memory: 1Gi}\nuses:\n" + "- *b\n" * 1000)
    with pytest.raises(ManifestError, match="excessive aliasing"):
        load_scenario(used)
    # the same anchor used by 30 objects of their own: a small share, kept
    fine = tmp_path / "fine.yaml"
    fine.write_text("apiVersion: v1\nkind: List\nitems:\n" + "".join(
        f"- {{apiVersion: v1, kind: Node, metadata: {{name: n{i}, labels: {{a: b, c: d, e: f}}}},"
        f" status: {{allocatable: {'&r ' if i == 0 else ''}{{cpu: '4', memory: 8Gi, pods: '110'}}}}}}\n"
        if i == 0 else f"- {{apiVersion: v1, kind: Node, metadata: {{name: n{i}, labels: {{a: b, c: d, e: f}}}},"
        f" status: {{allocatable: *r}}}}\n" for i in range(300)))
    assert len(load_scenario(fine).objects) == 300
