"""The what-if form's --apply and --scheduler-config: texts pasted (or read from a file) in the page
and sent in the JSON API are read as `kubesched whatif --apply FILE --scheduler-config FILE` reads
its files: the same answer, the same errors, and nothing run or changed on an error."""

from __future__ import annotations

import json
from html import unescape
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from kubesched.cli.main import cli  # noqa: E402
from kubesched.ui.state import UiState  # noqa: E402

from .conftest import BIG_NODE, followed, form_fields, job_result, ui_client  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DEMO = str(EXAMPLES / "demo.yaml")
NO_PREEMPTION = (EXAMPLES / "sweeps" / "no-preemption.yaml").read_text()

#: a bigger node for the pending pods, and a class for them (its typo is a warning, as in the CLI)
APPLY = BIG_NODE + """\
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: urgent}
value: 20000
descripton: a typo
"""


@pytest.fixture(scope="module")
def state() -> UiState:
    return UiState.load(DEMO)


@pytest.fixture(scope="module")
def client(state: UiState) -> TestClient:
    return ui_client(state)


def _whatif(*args: str) -> tuple[int, str]:
    out = CliRunner().invoke(cli, ["whatif", DEMO, *args])
    return out.exit_code, out.output


def _error_of(output: str) -> str:
    """The CLI's error: after its ``error: `` or, for an option's value, after click's usage lines."""
    if output.startswith("error: "):
        return output.removeprefix("error: ").strip()
    return output.split("\nError: ", 1)[1].strip()


def _files(tmp_path: Path, apply: str | None = None, config: str | None = None) -> list[str]:
    """whatif's options for the texts, written to files of the names the ui gives them."""
    args = []
    if apply is not None:
        (tmp_path / "apply.yaml").write_text(apply)
        args += ["--apply", str(tmp_path / "apply.yaml")]
    if config is not None:
        (tmp_path / "scheduler-config.yaml").write_text(config)
        args += ["--scheduler-config", str(tmp_path / "scheduler-config.yaml")]
    return args


def test_apply_and_a_scheduler_config_answer_as_the_cli(client: TestClient, tmp_path: Path) -> None:
    answer = client.post("/api/whatif", json={"apply": APPLY, "schedulerConfig": NO_PREEMPTION, "cordon": ["node-1"]})
    assert answer.status_code == 202, answer.text
    code, output = _whatif(*_files(tmp_path, APPLY, NO_PREEMPTION), "--cordon", "node-1", "-o", "json")
    assert code == 0, output
    said = json.loads(output[output.index("{"):])  # after the warning about the typo
    assert job_result(client, answer) == said
    assert said["changes"] == ["apply Node node-7", "apply PriorityClass urgent", "cordon node-1",
                               "new scheduler configuration"]
    assert said["summary"]["changed"]["preemptions"] == 0 < said["summary"]["baseline"]["preemptions"]  # the config
    # the form posts the same texts; the page shows the answer and the CLI's warning
    job = followed(client, client.post("/whatif", data={**form_fields(client, "/whatif"), "apply": APPLY, "schedulerConfig": NO_PREEMPTION,
                                                         "cordon": "node-1"}, follow_redirects=False))
    page = client.get(job["result"])
    assert page.status_code == 200
    text = unescape(page.text)
    assert f"<td>pending</td><td>{said['summary']['baseline']['pending']}</td>" \
           f"<td>{said['summary']['changed']['pending']}</td>" in text
    warning = next(line for line in output.splitlines() if line.startswith("warning: "))
    assert warning.replace(str(tmp_path / "apply.yaml"), "apply.yaml") in text
    assert "kind: PriorityClass" in text  # the texts stay in the form


@pytest.mark.parametrize(("apply", "config"), [
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: x\nspec: {}\n", None),  # broken YAML
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {}\n", None),  # no containers
    (None, "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
           "profiles: [{plugins: {score: {enabled: [{name: NoSuchPlugin}]}}}]\n"),
    (None, "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n"),  # not a configuration
    (APPLY, "profiles: [\n"),  # a good --apply and a broken configuration: nothing runs
])
def test_bad_texts_get_the_clis_error_and_nothing_runs(state: UiState, client: TestClient, tmp_path: Path,
                                                       apply: str | None, config: str | None) -> None:
    before, runs = client.get("/api/result").json(), state.whatif_count
    body = {k: v for k, v in (("apply", apply), ("schedulerConfig", config)) if v is not None}
    answer = client.post("/api/whatif", json=body)
    assert answer.status_code == 400
    detail = answer.json()["detail"]
    code, output = _whatif(*_files(tmp_path, apply, config))
    assert code == 2
    said = _error_of(output)
    for name in ("apply.yaml", "scheduler-config.yaml"):
        said = said.replace(str(tmp_path / name), name)
    assert detail == said
    assert detail.startswith("apply.yaml: document 1" if config is None else (
        "Invalid value for --scheduler-config: scheduler-config.yaml",  # click's words, read as the option's
        "scheduler-config.yaml: document 1"))  # found when the changed run's scheduler is built
    page = client.post("/whatif", data={**form_fields(client, "/whatif"), **body})
    assert page.status_code == 400 and "Traceback" not in page.text
    assert f'<p id="whatif-error" class="error">{detail}</p>' in unescape(page.text)
    assert "whatif-result" not in page.text
    assert client.get("/api/result").json() == before and state.whatif_count == runs  # nothing ran


def test_a_drains_grace_period_of_0_and_its_timeout_are_the_clis(client: TestClient) -> None:
    code, out = _whatif("--drain", "node-2", "--ignore-daemonsets", "--force", "--grace-period", "0",
                        "--drain-timeout", "2m", "-o", "json")
    assert code == 0, out
    said = json.loads(out)
    assert said["drains"][0]["options"]["gracePeriod"] == 0 and said["drains"][0]["options"]["timeout"] == 120
    body = {"drain": ["node-2"], "ignoreDaemonSets": True, "force": True, "gracePeriodSeconds": 0, "drainTimeout": "2m"}
    assert job_result(client, client.post("/api/whatif", json=body)) == said  # 0 is 0, not "the pod's own"
    # the form's fields, shown again with the answer
    fields = {"drain": "node-2", "ignoreDaemonSets": "on", "force": "on", "gracePeriodSeconds": "0", "drainTimeout": "2m"}
    job = followed(client, client.post("/whatif", data={**form_fields(client, "/whatif"), **fields},
                                       follow_redirects=False))
    assert job["state"] == "done", job
    assert client.get(job["apiResult"]).json() == said
    page = client.get(job["result"]).text
    assert 'id="grace-period" min="0" step="1" size="6" placeholder="the pod\'s" value="0"' in page
    assert 'id="drain-timeout" size="8" placeholder="none" value="2m"' in page
    # without them, the pods' own grace period and no timeout, as the CLI without its options
    plain = job_result(client, client.post("/api/whatif", json={**body, "gracePeriodSeconds": None, "drainTimeout": None}))
    assert plain["drains"][0]["options"]["gracePeriod"] is None and plain["drains"][0]["options"]["timeout"] is None


@pytest.mark.parametrize(("fields", "said"), [
    ({"drain": "node-2", "gracePeriodSeconds": "-1"}, "gracePeriodSeconds '-1': expected a whole number of seconds"),
    ({"drain": "node-2", "gracePeriodSeconds": "soon"}, "gracePeriodSeconds 'soon': expected a whole number"),
    ({"drain": "node-2", "drainTimeout": "soon"}, "drainTimeout: invalid duration 'soon'"),
    ({"drain": "node-2", "drainTimeout": "-5m"}, "drainTimeout '-5m': expected a duration of 0 or more"),
    ({"cordon": "node-1", "gracePeriodSeconds": "0"}, "gracePeriodSeconds and drainTimeout go with drain"),
])
def test_a_bad_grace_period_or_timeout_is_refused_and_nothing_runs(client: TestClient, fields: dict, said: str) -> None:
    jobs = client.get("/api/jobs").json()
    answer = client.post("/whatif", data={**form_fields(client, "/whatif"), **fields})
    assert answer.status_code == 400 and said in unescape(answer.text)
    assert client.get("/api/jobs").json() == jobs  # refused before any job started
    assert client.post("/api/whatif", json={"drain": ["node-2"], "gracePeriodSeconds": -1}).status_code == 422
