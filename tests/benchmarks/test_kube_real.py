"""benchmarks/kube_real.py's pieces that need no API server: the objects it creates, the
configuration and command line it gives kubesched, the throughput samples and the CPU reading.
(The measurement itself needs a real kube-apiserver, which no registry ships.)"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import kube_real  # noqa: E402

from kubesched.cli.main import cli  # noqa: E402


def test_nodes_are_ready_untainted_and_sized_like_scheduler_perf() -> None:
    node = kube_real.node_object("n1")
    assert node["status"]["allocatable"] == {"cpu": "4", "memory": "32Gi", "pods": "110"}
    assert {"type": "Ready", "status": "True"}.items() <= node["status"]["conditions"][0].items()
    assert "taints" not in node["spec"]
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "n1"


def test_pods_carry_requests_limits_and_the_preemption_fields() -> None:
    low = kube_real.pod_object("low", "900m", "500Mi", node="n1", grace=0)
    assert low["spec"]["nodeName"] == "n1" and low["spec"]["terminationGracePeriodSeconds"] == 0
    assert low["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "900m", "memory": "500Mi"},
                                                         "limits": {"cpu": "900m", "memory": "500Mi"}}
    high = kube_real.pod_object("high", "3000m", "500Mi", priority_class=kube_real.HIGH_PRIORITY_CLASS)
    assert high["spec"]["schedulerName"] == "default-scheduler" and "nodeName" not in high["spec"]
    assert kube_real.cpu_millis("3000m") == 3000 and kube_real.cpu_millis("4") == 4000


def test_kubesched_accepts_the_command_line_and_configuration_it_is_given() -> None:
    command = kube_real.kubesched_command("CONFIG", 5000.0, 5000, "info")
    assert command[1:4] == ["-m", "kubesched", "run"]
    help_text = CliRunner().invoke(cli, ["run", "--help"]).output
    for option in (arg for arg in command[4:] if arg.startswith("--")):
        assert option in help_text
    config = kube_real.scheduler_config("/k", 5000.0, 5000)
    assert config["clientConnection"] == {"kubeconfig": "/k", "qps": 5000.0, "burst": 5000}
    assert config["leaderElection"] == {"leaderElect": False}


def test_throughput_is_sampled_per_whole_second() -> None:
    samples = kube_real.per_second(10.0, [10.1, 10.5, 11.2, 12.9, 13.1])
    assert samples == [2, 1, 1]  # the partial last second is left out
    assert kube_real.percentile([5, 1, 3], 0.5) == 3.0
    assert kube_real.per_second(0.0, []) == []


def test_cpu_seconds_of_a_live_process_and_none_once_gone() -> None:
    assert (kube_real.process_cpu(os.getpid()) or 0.0) > 0.0
    assert kube_real.process_cpu(2 ** 22 + 1) is None


def test_the_volume_workload_in_the_simulator_gives_the_outcome_kube_scheduler_gave(tmp_path: Path) -> None:
    """The volume workload's objects, simulated: each pod on its node, each claim on the smallest
    volume that fits, and the unschedulable pods with the messages kube-scheduler v1.28.7 wrote for
    them against a real API server (a 100-node run of benchmarks/kube_real.py --workload volume)."""
    import kube_real_volume as workload

    from kubesched.sim import simulate
    from kubesched.testkit.scenarios import scenario_document, write_scenario

    nodes = [f"bench-node-{i}" for i in range(20)]
    volumes, claims, pods, bindable = workload.volume_objects(
        nodes, lambda name: kube_real.pod_object(name, "100m", "500Mi"))
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": workload.NAMESPACE}}
    docs = [namespace, *map(kube_real.node_object, nodes), *workload.storage_classes(), *volumes, *claims, *pods,
            scenario_document(seed=1)]
    result = simulate(write_scenario(tmp_path, docs), seed=1).result
    placed = {key.split("/", 1)[1]: p.get("node") for key, p in result["pods"].items()}
    assert {name for name, node in placed.items() if node} == bindable
    assert placed["vol-3"] == "bench-node-3" and placed["vol-16-large"] == "bench-node-16"
    messages = {e["pod"].split("/", 1)[1]: e["message"] for e in result["events"] if e["reason"] == "FailedScheduling"}
    tail = " preemption: 0/20 nodes are available: 20 Preemption is not helpful for scheduling.."
    assert messages["vol-8-too-big"] == "0/20 nodes are available: 20 node(s) didn't find available persistent " \
                                        "volumes to bind." + tail
    assert messages["vol-9-no-claim"] == '0/20 nodes are available: persistentvolumeclaim "claim-9-missing" not ' \
                                         "found." + tail
    assert messages["vol-9-immediate"] == "0/20 nodes are available: pod has unbound immediate " \
                                          "PersistentVolumeClaims." + tail


def test_two_volume_outcomes_are_compared_line_by_line() -> None:
    import kube_real_volume as workload

    same = {"pods": {"a": "n1"}, "claims": {"c": ["pv-1-a", "Bound"]}, "events": {"a": [["Scheduled", "x"]]}}
    other = {"pods": {"a": "n2"}, "claims": {"c": ["pv-1-a", "Bound"]}, "events": {"a": [["Scheduled", "x"]]}}
    assert workload.differences(same, same) == []
    assert workload.differences(same, other, ("ks", "kube")) == ['pods a: ks "n1" | kube "n2"']
