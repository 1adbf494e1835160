"""``spec.cluster`` validation dispatches to the settings modules with plain imports."""

from __future__ import annotations

import ast
from pathlib import Path

from kubesched.api.validation_cluster import CLUSTER_VALIDATORS, validate_cluster_config

API = Path(__file__).resolve().parents[2] / "src" / "kubesched" / "api"


def test_unknown_key_names_the_known_ones() -> None:
    errs: list[tuple[str, str]] = []
    validate_cluster_config({"nope": {}}, "spec.cluster", errs)
    assert errs == [("spec.cluster.nope", "unknown cluster setting (known: admission, autoscaler, eviction, storage, topology)")]
    assert sorted(CLUSTER_VALIDATORS) == ["admission", "autoscaler", "eviction", "storage", "topology"]


def test_each_section_goes_to_its_validator() -> None:
    errs: list[tuple[str, str]] = []
    validate_cluster_config({"eviction": {"bogus": 1}, "topology": {"nodes": [{"zones": []}]},
                             "autoscaler": {}, "admission": {"x": 1}}, "spec.cluster", errs)
    assert errs == [
        ("spec.cluster.eviction.bogus", "unknown field in spec.cluster.eviction"),
        ("spec.cluster.topology.nodes[0].zones", "must declare at least one zone"),
        ("spec.cluster.autoscaler.nodeGroups", "required value"),
        ("spec.cluster.admission.x", "unknown field in spec.cluster.admission"),
    ]


def test_the_api_layer_imports_nothing_by_name() -> None:
    """No module of ``kubesched.api`` loads modules by dotted name (``importlib``)."""
    for path in sorted(API.rglob("*.py")):
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}
        assert "importlib" not in names and "import_module" not in names, path.name
