"""The scheduler configuration's page and API: what the run uses (the scenario's, or kube-scheduler's
default profile written out), an edit of it applied as a new version of the scenario (the CLI's
checks and words, the stale-version check), a what-if of it that changes nothing, the warning of
pods no profile schedules, and a what-if whose applied objects admission refuses."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from kubesched.cli.main import cli  # noqa: E402
from kubesched.scheduler.plugins.registry import DEFAULT_MULTIPOINT  # noqa: E402
from kubesched.ui.state import UiState  # noqa: E402

from .conftest import followed, form_fields, ui_client  # noqa: E402

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo.yaml")
MY_SCHEDULER = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: my-scheduler
"""
UNKNOWN_CLASS_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: urgent, namespace: default}
spec:
  priorityClassName: does-not-exist
  containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]
"""


def _cli(*args: str) -> tuple[int, str, str]:
    out = CliRunner().invoke(cli, list(args))
    return out.exit_code, out.stdout, out.stderr


@pytest.fixture()
def client() -> TestClient:
    return ui_client(UiState.load(DEMO))


def _post_config(client: TestClient, text: str, action: str = "apply", fields: dict[str, str] | None = None):  # noqa: ANN202
    fields = fields or form_fields(client, "/config")
    return client.post("/config", data={**fields, "yaml": text, "action": action}, follow_redirects=False)


def _reweighted(text: str, plugin: str, weight: int) -> str:
    """The editor's text with ``plugin``'s Score weight changed, as a user changes it."""
    changed, count = re.subn(rf"(- name: {plugin}\n\s+weight: )\d+", rf"\g<1>{weight}", text)
    assert count == 1, text
    return changed


def test_the_default_configuration_per_extension_point_with_weights_and_default_args(client: TestClient) -> None:
    view = client.get("/api/config").json()
    assert view["default"] is True and view["version"] == 1
    assert view["source"] == "none given: kube-scheduler v1.28's default profile"
    assert view["warning"] is None and view["unservedPods"] == {}
    assert view["featureGates"] == {"SchedulerAsyncPreemption": False}
    (profile,) = view["profiles"]
    assert profile["schedulerName"] == "default-scheduler"
    plugins = profile["plugins"]
    assert [p["name"] for p in plugins["queueSort"]] == ["PrioritySort"]
    assert [p["name"] for p in plugins["bind"]] == ["DefaultBinder"]
    assert [p["name"] for p in plugins["postFilter"]] == ["DefaultPreemption"]
    # the Score plugins in the default list's order, with its weights
    weights = dict(DEFAULT_MULTIPOINT)
    assert [(p["name"], p["weight"]) for p in plugins["score"]] == [
        (name, weights[name]) for name in ("TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread",
                                           "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality")]
    args = {c["name"]: c["args"] for c in profile["pluginConfig"]}
    assert args["DefaultPreemption"] == {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}
    assert args["NodeResourcesFit"]["scoringStrategy"]["type"] == "LeastAllocated"
    # the page says the same without a script
    page = client.get("/config").text
    assert "Profile default-scheduler" in page and "TaintToleration (3)" in page and "minCandidateNodesAbsolute: 100" in page
    assert "SchedulerAsyncPreemption=false" in page


def test_the_editors_default_text_is_the_default(client: TestClient, tmp_path: Path) -> None:
    """The default written out configures the scheduler as no configuration does: the CLI's run
    with it is the run without one."""
    path = tmp_path / "default.yaml"
    path.write_text(client.get("/api/config").json()["yaml"])
    code, with_it, _ = _cli("simulate", DEMO, "--scheduler-config", str(path), "-o", "json")
    assert code == 0
    assert json.loads(with_it) == json.loads(_cli("simulate", DEMO, "-o", "json")[1])


def test_a_weight_changed_in_the_editor_is_a_new_version_the_cli_simulates_alike(client: TestClient,
                                                                                  tmp_path: Path) -> None:
    text = _reweighted(client.get("/api/config").json()["yaml"], "TaintToleration", 7)
    answer = _post_config(client, text)
    assert answer.status_code == 303  # to the job simulating again
    job = followed(client, answer)
    assert job["state"] == "done" and job["kind"] == "config" and job["basedOn"] == 1 and job["version"] == 2
    assert job["result"] == f"/config?job={job['id']}"
    view = client.get("/api/config").json()
    assert view["version"] == 2 and view["default"] is False
    assert view["source"] == "the configuration editor of this page"
    assert {p["name"]: p["weight"] for p in view["profiles"][0]["plugins"]["score"]}["TaintToleration"] == 7
    page = client.get(job["result"]).text
    assert "TaintToleration (7)" in page and 'id="config-done"' in page and "version 2" in page
    # the run every page shows is the CLI's under that configuration, and so is the scenario downloaded
    (tmp_path / "scheduler-config.yaml").write_text(text)
    code, out, _ = _cli("simulate", DEMO, "--scheduler-config", str(tmp_path / "scheduler-config.yaml"),
                        "--decisions", "-o", "json")
    assert code == 0 and client.get("/api/result").json() == json.loads(out)
    (tmp_path / "edited.yaml").write_text(client.get("/api/scenario.yaml").text)
    code, out, _ = _cli("simulate", str(tmp_path / "edited.yaml"), "--decisions", "-o", "json")
    assert code == 0 and client.get("/api/result").json() == json.loads(out)


def test_a_stale_config_edit_is_refused_and_starts_no_job(client: TestClient) -> None:
    fields = form_fields(client, "/config")  # two tabs of version 1
    text = client.get("/api/config").json()["yaml"]
    first = followed(client, _post_config(client, _reweighted(text, "NodeAffinity", 5), fields=fields))
    assert first["state"] == "done" and client.get("/api/config").json()["version"] == 2
    jobs = len(client.get("/api/jobs").json())
    stale = _reweighted(text, "ImageLocality", 9)
    answer = _post_config(client, stale, fields=fields)
    assert answer.status_code == 409
    assert "the scenario is at version 2, and this edit was made on version 1" in answer.text
    assert "ImageLocality\n        weight: 9" in answer.text  # the text kept, to send again
    assert len(client.get("/api/jobs").json()) == jobs
    score = client.get("/api/config").json()["profiles"][0]["plugins"]["score"]
    assert {p["name"]: p["weight"] for p in score}["ImageLocality"] == 1  # the first edit's, unchanged
    assert {p["name"]: p["weight"] for p in score}["NodeAffinity"] == 5
    # the API checks the same version, from the body or If-Match
    refused = client.post("/api/config", json={"yaml": stale}, headers={"If-Match": '"1"'})
    assert refused.status_code == 409 and len(client.get("/api/jobs").json()) == jobs


@pytest.mark.parametrize(("text", "cli_says"), [
    (MY_SCHEDULER + "percentageOfNodesToScre: 5\n", "Error: "),
    (MY_SCHEDULER.replace("- schedulerName: my-scheduler",
                          "- plugins: {score: {enabled: [{name: NoSuchPlugin}]}}"), "error: "),
    (MY_SCHEDULER + "  pluginConfig: [{name: DefaultPreemption, args: {minCandidateNodesPercentage: 200}}]\n",
     "error: "),
])
def test_a_configuration_the_cli_refuses_is_refused_in_its_words(client: TestClient, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch, text: str,
                                                                  cli_says: str) -> None:
    before = client.get("/api/result").json()
    answer = _post_config(client, text)
    assert answer.status_code == 400
    shown = re.search(r'<p id="config-error" class="error">(.*?)</p>', answer.text, re.S)
    assert shown is not None
    monkeypatch.chdir(tmp_path)  # the CLI given a file of the name the page calls the text
    Path("scheduler-config.yaml").write_text(text)
    code, _, err = _cli("simulate", DEMO, "--scheduler-config", "scheduler-config.yaml")
    assert code == 2
    assert " ".join((cli_says + unescape(shown.group(1))).split()) in " ".join(err.split())
    assert "scheduler-config.yaml" in shown.group(1)
    assert client.get("/api/result").json() == before and client.get("/api/config").json()["version"] == 1
    assert client.post("/api/config", json={"yaml": text}).status_code == 400


def test_pods_no_profile_schedules_are_warned_of_on_every_page_and_nothing_is_refused(client: TestClient,
                                                                                      tmp_path: Path) -> None:
    job = followed(client, _post_config(client, MY_SCHEDULER))
    assert job["state"] == "done"  # refused nothing
    assert client.get("/api/result").json()["summary"]["pending"] == 24
    said = ("24 pods ask for a scheduler no profile of this configuration provides: default-scheduler "
            "(its profiles: my-scheduler); they stay pending")
    assert client.get("/api/config").json()["warning"] == said
    assert client.get("/api/config").json()["unservedPods"] == {"default-scheduler": 24}
    for path in ("/", "/pods", "/timeline", "/whatif", "/edit", "/config", "/nodes/node-1"):
        assert f'<p class="error banner" id="unserved-warning">{said}' in client.get(path).text, path
    assert "kube-scheduler leaves a pod to the scheduler its" in client.get("/config").text
    (tmp_path / "config.yaml").write_text(MY_SCHEDULER)  # the CLI's words are the same
    assert f"warning: {said}" in _cli("simulate", DEMO, "--scheduler-config", str(tmp_path / "config.yaml"))[2]
    # with both profiles, the warning is gone
    both = followed(client, _post_config(client, MY_SCHEDULER + "- schedulerName: default-scheduler\n"))
    assert both["state"] == "done" and client.get("/api/config").json()["warning"] is None
    assert 'id="unserved-warning"' not in client.get("/").text


def test_what_if_with_this_configuration_changes_nothing(client: TestClient, tmp_path: Path) -> None:
    text = _reweighted(client.get("/api/config").json()["yaml"], "NodeResourcesFit", 10)
    answer = _post_config(client, text, action="whatif")
    assert answer.status_code == 303
    job = followed(client, answer)
    assert job["state"] == "done" and job["kind"] == "whatif" and job["result"].startswith("/whatif?run=")
    (tmp_path / "scheduler-config.yaml").write_text(text)
    code, out, _ = _cli("whatif", DEMO, "--scheduler-config", str(tmp_path / "scheduler-config.yaml"), "-o", "json")
    assert code == 0 and client.get(job["apiResult"]).json() == json.loads(out)
    assert "NodeResourcesFit\n        weight: 10" in client.get(job["result"]).text  # the form as it was sent
    assert client.get("/api/config").json()["version"] == 1  # the scenario is as it was
    assert client.get("/api/config").json()["default"] is True
    refused = _post_config(client, "kind: Pod\n", action="whatif")
    assert refused.status_code == 400 and 'id="config-error"' in refused.text


def test_a_whatifs_objects_admission_refuses_are_shown(client: TestClient) -> None:
    fields = form_fields(client, "/whatif")
    answer = client.post("/whatif", data={"csrf_token": fields["csrf_token"], "apply": UNKNOWN_CLASS_POD},
                         follow_redirects=False)
    job = followed(client, answer)
    assert job["state"] == "done"
    diff = client.get(job["apiResult"]).json()
    why = 'pods "urgent" is forbidden: no PriorityClass with name does-not-exist was found'
    assert diff["rejected"] == [{"time": 0.0, "kind": "Pod", "name": "urgent", "namespace": "default", "code": 403,
                                 "reason": why}]
    page = client.get(job["result"]).text
    assert "Refused by admission (1)" in page and "refused by admission 1" in page
    assert why.replace('"', "&#34;") in page
