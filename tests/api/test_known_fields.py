"""Fields a kind does not declare (typos, mostly) are reported by full path, as kubectl's strict field
validation would; known fields of every kind, status and metadata included, are not."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from kubesched.api.errors import Location, ManifestError
from kubesched.api.known_fields import unknown_configuration_fields, unknown_fields
from kubesched.api.loader import load_manifests, load_scenario, load_scheduler_configuration, strict_error

ROOT = Path(__file__).resolve().parents[2]
DUMP = Path(__file__).parent / "fixtures" / "kubectl-dump.yaml"


def dump_with(tmp_path: Path, old: str, new: str, first_of: int = 1) -> Path:
    """The kubectl dump with a piece of text replaced: the only one, or the first of ``first_of``."""
    text = DUMP.read_text()
    assert text.count(old) == first_of, old
    path = tmp_path / "dump.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


def warning_lines(path: Path) -> list[str]:
    return [str(w) for w in load_scenario(path).warnings]


def test_a_kubectl_dump_has_no_unknown_field() -> None:
    scenario = load_scenario(DUMP)
    assert len(scenario.objects) == 8
    assert scenario.warnings == []


def test_a_misspelt_field_deep_inside_a_deployment_is_named_by_its_full_path(tmp_path: Path) -> None:
    # the Deployment's pod template comes first; its ReplicaSet's has the same text
    dump = dump_with(tmp_path, "            requests:\n", "            requets:\n", first_of=2)
    assert warning_lines(dump) == [
        f'{dump}: document 1 (Deployment shop/web): unknown field '
        '"items[5].spec.template.spec.containers[0].resources.requets"'
    ]
    # the objects are still loaded: a warning, not an error
    assert len(load_scenario(dump).objects) == 8


@pytest.mark.parametrize("old, new, ref, field", [
    ("    nodeName: worker-1\n", "    nodeName: worker-1\n    nodeSelectr: {disk: ssd}\n", "Pod shop/web-7d4b9c8f6d-x2kqp",
     "items[7].spec.nodeSelectr"),
    ("    hostIP: 172.18.0.3\n", "    hostIP: 172.18.0.3\n    hostIp: 172.18.0.3\n", "Pod shop/web-7d4b9c8f6d-x2kqp",
     "items[7].status.hostIp"),
    ("        - serviceAccountToken:\n            expirationSeconds: 3607\n",
     "        - serviceAccountToken:\n            expirationSecond: 3607\n", "Pod shop/web-7d4b9c8f6d-x2kqp",
     "items[7].spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSecond"),
    ("        runAsNonRoot: true\n", "        runAsNonroot: true\n", "Pod shop/web-7d4b9c8f6d-x2kqp",
     "items[7].spec.containers[0].securityContext.runAsNonroot"),
    ("          scheme: HTTP\n", "          schema: HTTP\n", "Pod shop/web-7d4b9c8f6d-x2kqp",
     "items[7].spec.containers[0].livenessProbe.httpGet.schema"),
    ("      blockOwnerDeletion: true\n      controller: true\n      kind: ReplicaSet\n",
     "      blockOwnerDeletion: true\n      controler: true\n      kind: ReplicaSet\n", "Pod shop/web-7d4b9c8f6d-x2kqp",
     "items[7].metadata.ownerReferences[0].controler"),
    ("    podCIDR: 10.244.1.0/24\n", "    podCIDR: 10.244.1.0/24\n    unschedulabel: true\n", "Node worker-1",
     "items[0].spec.unschedulabel"),
    ("      kubeletVersion: v1.28.7\n", "      kubeletVersoin: v1.28.7\n", "Node worker-1",
     "items[0].status.nodeInfo.kubeletVersoin"),
    ("  preemptionPolicy: PreemptLowerPriority\n  value: 1000\n",
     "  preemptionPolicy: PreemptLowerPriority\n  valeu: 1000\n  value: 1000\n", "PriorityClass online", "items[1].valeu"),
    ("        scopeName: PriorityClass\n", "        scopeName: PriorityClass\n        scopename: PriorityClass\n",
     "ResourceQuota shop/shop-quota", "items[2].spec.scopeSelector.matchExpressions[0].scopename"),
    ("    minAvailable: 1\n", "    minAvailabe: 1\n    minAvailable: 1\n", "PodDisruptionBudget shop/web",
     "items[3].spec.minAvailabe"),
    ("      targetPort: 8080\n", "      targetport: 8080\n", "Service shop/web", "items[4].spec.ports[0].targetport"),
    ("    progressDeadlineSeconds: 600\n", "    progressDeadline: 600\n", "Deployment shop/web",
     "items[5].spec.progressDeadline"),
    ("    fullyLabeledReplicas: 1\n", "    fullyLabelledReplicas: 1\n", "ReplicaSet shop/web-7d4b9c8f6d",
     "items[6].status.fullyLabelledReplicas"),
])
def test_a_typo_in_any_kind_is_reported(tmp_path: Path, old: str, new: str, ref: str, field: str) -> None:
    dump = dump_with(tmp_path, old, new)
    assert warning_lines(dump) == [f'{dump}: document 1 ({ref}): unknown field "{field}"']


def test_field_names_are_case_sensitive() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"NodeSelector": {"a": "b"}, "containers": [{"name": "c", "image": "x"}]}}
    assert unknown_fields(pod) == ["spec.NodeSelector"]


@pytest.mark.parametrize("manifest, expected", [
    ({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
      "spec": {"serviceName": "db", "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                                              "spec": {"accessModes": ["ReadWriteOnce"], "storageClas": "x"}}]}},
     ["spec.volumeClaimTemplates[0].spec.storageClas"]),
    ({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
      "spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0, "maxsurge": 1}}}},
     ["spec.updateStrategy.rollingUpdate.maxsurge"]),
    ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "etl"},
      "spec": {"backoffLimitPerIndex": 1, "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodCondition": []}]}}},
     ["spec.podFailurePolicy.rules[0].onPodCondition"]),
    ({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"}, "spec": {"selectr": {}}},
     ["spec.selectr"]),
    ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}, "spec": {"finalizers": ["kubernetes"]},
      "status": {"phase": "Active", "phaze": "Active"}},
     ["status.phaze"]),
    ({"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology", "metadata": {"name": "n"},
      "topologyPolicies": ["SingleNUMANodeContainerLevel"], "attributes": [{"name": "a", "value": "b"}],
      "zones": [{"name": "node-0", "type": "Node", "costs": [{"name": "node-0", "value": 10}],
                 "resources": [{"name": "cpu", "capacity": "4", "allocatable": "4", "available": "4", "availabe": "4"}]}]},
     ["zones[0].resources[0].availabe"]),
    # v1.28 alpha field dropped by later APIs: still known
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
      "spec": {"resourceClaims": [{"name": "gpu", "source": {"resourceClaimTemplateName": "t"}}]}}, []),
])
def test_other_kinds(manifest: dict[str, object], expected: list[str]) -> None:
    assert unknown_fields(manifest) == expected


def test_scenario_steps_and_patches_are_checked_and_its_own_fields_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("""\
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {name: s, labelz: {a: b}}
spec:
  steps:
  - at: 1s
    create: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {nodeSelectr: {}, containers: [{name: c, image: x}]}}
  - at: 2s
    patch: {kind: Node, name: n1, merge: {spec: {unschedulabel: true}}}
""")
    assert warning_lines(path) == [
        f'{path}: document 1 (Scenario s): unknown field "metadata.labelz"',
        f'{path}: document 1 (Scenario s): unknown field "spec.steps[0].create.spec.nodeSelectr"',
        f'{path}: document 1 (Scenario s): unknown field "spec.steps[1].patch.merge.spec.unschedulabel"',
    ]
    path.write_text("apiVersion: kubesched.io/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspecs: {seed: 3}\n")
    with pytest.raises(ManifestError) as err:
        load_scenario(path)
    assert str(err.value) == f"{path}: document 1 (Scenario s): specs: unknown field in a Scenario"


def test_strict_error_lists_every_warning(tmp_path: Path) -> None:
    dump = dump_with(tmp_path, "    nodeName: worker-1\n", "    nodeName: worker-1\n    nodeSelectr: {}\n    prioriti: 1\n")
    error = strict_error(load_scenario(dump).warnings)
    assert error is not None
    assert str(error).splitlines() == [
        f'{dump}: document 1 (Pod shop/web-7d4b9c8f6d-x2kqp): unknown field "items[7].spec.nodeSelectr"',
        "... and 1 more error:",
        f'  {dump}: document 1 (Pod shop/web-7d4b9c8f6d-x2kqp): unknown field "items[7].spec.prioriti"',
    ]
    assert strict_error([]) is None


def test_manifests_collect_warnings_when_asked(tmp_path: Path) -> None:
    dump = dump_with(tmp_path, "    nodeName: worker-1\n", "    nodeName: worker-1\n    nodeSelectr: {}\n")
    warnings: list[ManifestError] = []
    assert len(load_manifests([dump], warnings)) == 8
    assert [w.message for w in warnings] == ['unknown field "items[7].spec.nodeSelectr"']


CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      disabled: [{name: DefaultPreemption}]
"""


def test_scheduler_configuration_unknown_fields_including_plugin_args() -> None:
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "percentageOfNodesToScore": 50, "profile": [],
              "leaderElection": {"leaderElect": False, "leaseDurations": "15s"},
              "profiles": [{"schedulerName": "a", "plugins": {"scor": {"enabled": [{"name": "X", "wieght": 2}]}},
                            "pluginConfig": [
                                {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated",
                                                                                          "resource": []}}},
                                {"name": "NodeAffinity", "args": {"addedAffinity": {"requiredDuringScheduling": {}}}},
                                {"name": "OutOfTree", "args": {"anything": 1}}]}]}
    assert unknown_configuration_fields(config) == [
        "profile", "leaderElection.leaseDurations", "profiles[0].plugins.scor",
        "profiles[0].pluginConfig[0].args.scoringStrategy.resource",
        "profiles[0].pluginConfig[1].args.addedAffinity.requiredDuringScheduling",
    ]


def test_scenario_scheduler_configuration_with_an_unknown_field_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("apiVersion: kubesched.io/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec:\n"
                    "  schedulerConfiguration:\n" + "".join(f"    {line}\n" for line in CONFIG.splitlines())
                    + "    podMaxBackoff: 5\n")
    with pytest.raises(ManifestError) as err:
        load_scenario(path)
    assert str(err.value) == f"{path}: document 1 (Scenario s): spec.schedulerConfiguration.podMaxBackoff: unknown field"


def test_a_scheduler_configuration_document_configures_the_scenario(tmp_path: Path) -> None:
    folder = tmp_path / "cluster"
    folder.mkdir()
    (folder / "config.yaml").write_text(CONFIG)
    (folder / "nodes.yaml").write_text(DUMP.read_text())
    scenario = load_scenario(folder)
    assert scenario.scheduler_configuration is not None
    assert scenario.scheduler_configuration["profiles"][0]["plugins"]["multiPoint"]["disabled"] == [
        {"name": "DefaultPreemption"}]
    assert scenario.scheduler_configuration_source == Location(str(folder / 'config.yaml'), 1,
                                                               object_ref="KubeSchedulerConfiguration")
    assert all(o["kind"] != "KubeSchedulerConfiguration" for o in scenario.objects)

    (folder / "scenario.yaml").write_text("apiVersion: kubesched.io/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
                                          "spec:\n  schedulerConfiguration: {apiVersion: kubescheduler.config.k8s.io/v1, "
                                          "kind: KubeSchedulerConfiguration}\n")
    with pytest.raises(ManifestError) as err:
        load_scenario(folder)
    assert str(err.value) == (f"{folder / 'config.yaml'}: document 1 (KubeSchedulerConfiguration): two scheduler "
                              f"configurations: this document and {folder / 'scenario.yaml'}: document 1, "
                              "spec.schedulerConfiguration; keep one")

    (folder / "scenario.yaml").unlink()
    (folder / "more.yaml").write_text(CONFIG)
    with pytest.raises(ManifestError, match="more than one KubeSchedulerConfiguration document"):
        load_scenario(folder)


@pytest.mark.parametrize("content, message", [
    ("", "expected a KubeSchedulerConfiguration document, found none"),
    (CONFIG + "---\n" + CONFIG, "expected a single document, a KubeSchedulerConfiguration; found 2 objects"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", "expected a KubeSchedulerConfiguration document"),
    (CONFIG + "percentageOfNodes: 10\n", "percentageOfNodes: unknown field"),
])
def test_a_scheduler_configuration_file_is_one_valid_document(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(content)
    with pytest.raises(ManifestError) as err:
        load_scheduler_configuration(str(path))
    assert str(err.value).startswith(str(path))
    assert message in str(err.value)


def test_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(DUMP.read_text().replace("hostIP: 172", "hostIp: 172")))
    scenario = load_scenario("-")
    assert scenario.name == "stdin"
    assert len(scenario.objects) == 8
    assert [str(w) for w in scenario.warnings] == [
        '<stdin>: document 1 (Pod shop/web-7d4b9c8f6d-x2kqp): unknown field "items[7].status.hostIp"']
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    with pytest.raises(ManifestError) as err:
        load_scenario("-")
    assert str(err.value) == "<stdin>: nothing to simulate: the input has no Kubernetes object or Scenario"


def test_the_generated_field_names_are_current() -> None:
    pytest.importorskip("kubernetes")
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_known_fields.py"), "--check"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
