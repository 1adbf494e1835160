from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.errors import ManifestError
from kubesched.api.loader import Scenario, default_object, load_manifests, load_scenario

NODE = """\
apiVersion: v1
kind: Node
metadata: {name: n1, creationTimestamp: 2024-01-01T00:00:00Z}
status: {capacity: {cpu: "4", memory: 8Gi, pods: 110}}
"""
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: c, image: nginx, resources: {limits: {cpu: "1", memory: 1Gi}, requests: {cpu: 500m}}}]
"""
CLASS = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""
SCENARIO = """\
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {name: preemption-basic}
spec:
  seed: 7
  until: 10m
  schedulerConfiguration:
    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    profiles: [{schedulerName: default-scheduler}]
  steps:
  - at: 30s
    delete: {kind: Pod, name: v, gracePeriodSeconds: 5}
  - at: 5s
    create: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: x, resources: {limits: {cpu: 2}}}]}}
  - at: 40s
    patch: {kind: Node, name: n1, merge: {spec: {unschedulable: true}}}
  - at: 5s
    delete: {kind: PriorityClass, name: high}
"""


def write(path: Path, *docs: str) -> Path:
    path.write_text("---\n".join(docs))
    return path


def load_error(path: Path) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        load_scenario(path)
    return info.value


def test_scenario_file_gives_objects_in_file_order_with_sources(tmp_path: Path) -> None:
    f = write(tmp_path / "x.yaml", SCENARIO, NODE, CLASS, POD)
    sc = load_scenario(f)
    assert isinstance(sc, Scenario)
    assert [o["kind"] for o in sc.objects] == ["Node", "PriorityClass", "Pod"]
    assert sc.sources == [f"{f}: document 2", f"{f}: document 3", f"{f}: document 4"]
    assert (sc.name, sc.seed, sc.until) == ("preemption-basic", 7, 600.0)
    assert sc.scheduler_configuration is not None
    assert sc.scheduler_configuration["kind"] == "KubeSchedulerConfiguration"


def test_loader_applies_api_server_defaults(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path / "x.yaml", NODE, CLASS, POD))
    node, pclass, pod = sc.objects
    assert "namespace" not in node["metadata"] and "namespace" not in pclass["metadata"]
    assert pod["metadata"]["namespace"] == "default"
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}


def test_yaml_timestamps_stay_strings(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path / "x.yaml", NODE))
    assert sc.objects[0]["metadata"]["creationTimestamp"] == "2024-01-01T00:00:00Z"


def test_steps_are_sorted_stably_by_time_and_fully_described(tmp_path: Path) -> None:
    f = write(tmp_path / "x.yaml", SCENARIO)
    steps = load_scenario(f).steps
    assert [(s.at, s.action, s.kind, s.name, s.namespace) for s in steps] == [
        (5.0, "create", "Pod", "p", "default"),
        (5.0, "delete", "PriorityClass", "high", ""),
        (30.0, "delete", "Pod", "v", "default"),
        (40.0, "patch", "Node", "n1", ""),
    ]
    create, _, delete, patch = steps
    assert create.obj is not None and create.obj["metadata"]["namespace"] == "default"
    assert create.obj["spec"]["containers"][0]["resources"]["requests"] == {"cpu": 2}
    assert create.source == f"{f}: document 1, spec.steps[1]"
    assert delete.grace_period_seconds == 5 and delete.obj is None
    assert patch.merge == {"spec": {"unschedulable": True}}


def test_scenario_defaults_without_a_scenario_document(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path / "cluster.yaml", NODE))
    assert (sc.name, sc.seed, sc.until, sc.scheduler_configuration, sc.steps) == ("cluster", 0, None, None, [])


def test_scenario_name_defaults_to_stem_when_metadata_has_none(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path / "mine.yml", "apiVersion: kubesched.io/v1alpha1\nkind: Scenario\nspec: {seed: 3}\n"))
    assert (sc.name, sc.seed) == ("mine", 3)


def test_directory_is_read_in_name_order_non_recursively(tmp_path: Path) -> None:
    d = tmp_path / "scen"
    d.mkdir()
    write(d / "b.yml", POD)
    write(d / "a.yaml", NODE)
    (d / "c.json").write_text(json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}))
    (d / "notes.txt").write_text("not yaml: [")
    (d / "sub").mkdir()
    write(d / "sub" / "z.yaml", "garbage: [")
    sc = load_scenario(d)
    assert sc.name == "scen"
    assert [o["kind"] for o in sc.objects] == ["Node", "Pod", "Namespace"]
    assert sc.sources[2] == f"{d / 'c.json'}: document 1"


def test_list_documents_are_expanded(tmp_path: Path) -> None:
    lst = textwrap.dedent("""\
        apiVersion: v1
        kind: List
        items:
        - {apiVersion: v1, kind: Namespace, metadata: {name: a}}
        - {apiVersion: v1, kind: Namespace, metadata: {name: b}}
        """)
    f = write(tmp_path / "x.yaml", NODE, lst)
    sc = load_scenario(f)
    assert [o["metadata"]["name"] for o in sc.objects] == ["n1", "a", "b"]
    assert sc.sources[2] == f"{f}: document 2, items[1]"


def test_errors_inside_list_items_name_the_item(tmp_path: Path) -> None:
    lst = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: n}}\n"
    err = load_error(write(tmp_path / "x.yaml", lst))
    assert err.path == "items[0].status"


def test_empty_documents_are_skipped_but_counted(tmp_path: Path) -> None:
    bad_pod = POD.replace("500m", "12x")
    f = write(tmp_path / "x.yaml", NODE, "", "# just a comment\n", bad_pod)
    err = load_error(f)
    assert str(err) == (f'{f}: document 4 (Pod default/web): spec.containers[0].resources.requests.cpu: '
                        'invalid quantity "12x"')
    assert (err.file, err.document, err.path) == (str(f), 4, "spec.containers[0].resources.requests.cpu")


def test_all_errors_are_collected_and_the_first_is_reported(tmp_path: Path) -> None:
    f = write(tmp_path / "x.yaml", NODE.replace('"4"', "four"), POD.replace("nginx", "null"))
    err = load_error(f)
    assert [(e.document, e.path) for e in err.errors] == [
        (1, "status.capacity.cpu"), (2, "spec.containers[0].image")]
    assert str(err).startswith(f'{f}: document 1 (Node n1): status.capacity.cpu: invalid quantity "four"')
    assert "document 2 (Pod default/web): spec.containers[0].image: required value" in str(err)


@pytest.mark.parametrize(
    ("content", "document", "fragment"),
    [
        ("a: [1,\n", 1, "line 2"),
        (NODE + "---\nmetadata: {name: [\n", 2, "YAML syntax error"),
        (NODE + "---\nkey: value\n  bad: indent\n", 2, "line 7, column 6"),
    ],
)
def test_yaml_syntax_errors_name_document_and_line(tmp_path: Path, content: str, document: int, fragment: str) -> None:
    err = load_error(write(tmp_path / "x.yaml", content))
    assert err.document == document
    assert fragment in str(err)


def test_json_syntax_errors_name_the_line(tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_text('{\n  "kind": \n}')
    err = load_error(f)
    assert "line 3" in str(err) and err.document == 1


@pytest.mark.parametrize(
    ("docs", "fragment"),
    [
        ((SCENARIO, SCENARIO), "more than one Scenario document"),
        (("- just\n- a list\n",), "an object must be a mapping, got list"),
        (("hello\n",), "an object must be a mapping, got string"),
        (("apiVersion: v1\nkind: List\nitems: 3\n",), "a List needs an `items` list"),
        (("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n",), 'unsupported kind "ConfigMap"'),
        (("apiVersion: v1\nkind: List\nitems: [{apiVersion: kubesched.io/v1alpha1, kind: Scenario}]\n",),
         "a Scenario cannot be an item of a List"),
    ],
)
def test_malformed_documents_are_refused(tmp_path: Path, docs: tuple[str, ...], fragment: str) -> None:
    err = load_error(write(tmp_path / "x.yaml", *docs))
    assert any(fragment in e.message for e in err.errors), str(err)


def test_missing_path_is_a_manifest_error(tmp_path: Path) -> None:
    err = load_error(tmp_path / "absent.yaml")
    assert "no such file" in str(err)


def test_load_manifests_reads_several_paths_and_keeps_scenarios(tmp_path: Path) -> None:
    a = write(tmp_path / "a.yaml", NODE, SCENARIO)
    b = write(tmp_path / "b.yaml", POD)
    got = load_manifests([a, b])
    assert [(o["kind"], src) for o, src in got] == [
        ("Node", f"{a}: document 1"), ("Scenario", f"{a}: document 2"), ("Pod", f"{b}: document 1")]
    assert got[2][0]["metadata"]["namespace"] == "default"


def test_default_object_does_not_mutate_its_input() -> None:
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Deployment", "metadata": {"name": "d"},
                           "spec": {"template": {"spec": {"containers": [
                               {"name": "c", "image": "x", "resources": {"limits": {"cpu": "1"}}}]}}}}
    out = default_object(pod)
    assert "namespace" not in pod["metadata"]
    assert "requests" not in pod["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert out["metadata"]["namespace"] == "default"
    assert out["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}


def test_explicit_namespace_is_kept(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path / "x.yaml", POD.replace("name: web", "name: web, namespace: team")))
    assert sc.objects[0]["metadata"]["namespace"] == "team"
