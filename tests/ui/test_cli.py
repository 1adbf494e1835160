"""``kubesched ui`` as a user starts it: the URL printed, loopback unless asked, a warning when not,
the names it answers to (--allow-host),
the browser opened only with --open, and a broken scenario refused with the loader's words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")
import uvicorn  # noqa: E402

from kubesched.cli.main import cli  # noqa: E402

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo.yaml")


@pytest.fixture()
def served(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The server's config and the pages opened in a browser, instead of serving."""
    seen: list[Any] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, *a, **k: seen.append(self.config))
    monkeypatch.setattr("webbrowser.open", lambda url: seen.append(("opened", url)))
    return seen


def test_it_listens_on_loopback_and_prints_the_url(served: list[Any]) -> None:
    out = CliRunner().invoke(cli, ["ui", DEMO, "--port", "8765"])
    assert out.exit_code == 0, out.output
    assert "at http://127.0.0.1:8765/ (Ctrl-C to stop)" in out.output
    assert "warning" not in out.output
    (config,) = served  # nothing opened
    assert (config.host, config.port) == ("127.0.0.1", 8765)


def test_another_address_is_served_with_a_warning_and_open_opens(served: list[Any]) -> None:
    out = CliRunner().invoke(cli, ["ui", DEMO, "--host", "0.0.0.0", "--port", "8765", "--open"])
    assert out.exit_code == 0, out.output
    assert "warning: listening on 0.0.0.0: anyone who reaches this machine" in out.output
    assert ("opened", "http://0.0.0.0:8765/") in served


def test_a_broken_scenario_is_refused_before_serving(served: list[Any], tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: Scenario\nnodes: [\n")
    out = CliRunner().invoke(cli, ["ui", str(broken)])
    assert out.exit_code == 2 and out.output.startswith("error: ")
    assert "Traceback" not in out.output and not served


def test_allow_host_adds_names_to_those_the_server_answers(served: list[Any]) -> None:
    from fastapi.testclient import TestClient

    out = CliRunner().invoke(cli, ["ui", DEMO, "--host", "0.0.0.0", "--port", "8765",
                                   "--allow-host", "kubesched.internal", "--allow-host", "10.0.0.5"])
    assert out.exit_code == 0, out.output
    assert "give --allow-host NAME" not in out.output  # the warning for 0.0.0.0 without any
    (config,) = served
    client = TestClient(config.app, base_url="http://kubesched.internal:8765")
    assert client.get("/api/cluster").status_code == 200
    for host, status in (("10.0.0.5:8765", 200), ("localhost:8765", 200), ("evil.example:8765", 400)):
        assert client.get("/api/cluster", headers={"Host": host}).status_code == status, host
    bare = CliRunner().invoke(cli, ["ui", DEMO, "--host", "0.0.0.0"])
    assert "warning: only requests naming localhost or 127.0.0.1 are answered: give --allow-host NAME" in bare.output


def test_a_bad_allow_host_is_refused(served: list[Any]) -> None:
    out = CliRunner().invoke(cli, ["ui", DEMO, "--allow-host", "http://kubesched.internal:8750"])
    assert out.exit_code == 2 and "Invalid value for --allow-host" in out.output
    assert "without a scheme, port or path" in out.output and not served
