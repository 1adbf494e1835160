"""kubesched snapshot streams the cluster to disk page by page: yaml, json and jsonl files that hold
exactly what take_snapshot reads, written all or nothing, without holding more than a page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from fakeapi import FakeApiServer
from fakefaults import Fault

from conftest import FAST_CLIENT
from kubesched.cli.main import cli
from kubesched.cli.snapshot import ListWriter, _Dumper, format_of, write_snapshot_file
from kubesched.cluster.kube import Transport, load_api_client
from kubesched.cluster.kube import snapshot as kube_snapshot
from kubesched.cluster.kube.snapshot import iter_snapshot, take_snapshot
from kubesched.k8s.objects import ApiError
from kubesched.testkit.builders import make_deployment, make_node, make_pod, make_priority_class

PODS = 3000
PAGE = 100
FORMATS = ("yaml", "json", "jsonl")
LIST_TAIL = {"kind": "List", "metadata": {"resourceVersion": ""}}


def _many(fake: FakeApiServer, pods: int = PODS, finished: int = 40) -> None:
    """Several kinds; ``pods`` running pods (with an environment value each) and ``finished``
    Succeeded/Failed ones, interleaved."""
    fake.create(make_priority_class("high", 1000))
    for i in range(12):
        fake.create(make_node(f"node-{i:02}", cpu="64"))
    web = make_deployment("web", 2, make_pod("web", cpu="500m"))
    web["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "PASSWORD", "value": "hunter2"}]
    fake.create(web)
    for i in range(pods + finished):
        obj = make_pod(f"pod-{i:05}", cpu="10m")
        obj["spec"]["containers"][0]["env"] = [{"name": "TOKEN", "value": f"secret-{i}"},
                                               {"name": "REF", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
        obj["spec"]["nodeName"] = f"node-{i % 12:02}"
        done = finished > 0 and i % ((pods + finished) // finished) == 0
        obj["status"] = {"phase": ("Succeeded" if i % 2 else "Failed") if done else "Running"}
        fake.create(obj)


def _fast_transport(kubeconfig: str) -> Transport:
    return Transport(load_api_client(kubeconfig), FAST_CLIENT, user_agent="kubesched-snapshot")


def _items(path: Path, fmt: str) -> list[dict[str, Any]]:
    text = path.read_text()
    if fmt == "jsonl":
        return [json.loads(line) for line in text.splitlines()]
    doc = json.loads(text) if fmt == "json" else yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    assert list(doc) == ["apiVersion", "items", "kind", "metadata"]  # kubectl's List, keys sorted
    assert {k: v for k, v in doc.items() if k != "items"} == {"apiVersion": "v1", **LIST_TAIL}
    return doc["items"]  # type: ignore[no-any-return]


def _whole(items: list[dict[str, Any]], fmt: str) -> str:
    """The List dumped at once."""
    doc = {"apiVersion": "v1", "items": items, **LIST_TAIL}
    if fmt == "json":
        return json.dumps(doc, indent=4) + "\n"
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False)  # type: ignore[no-any-return]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_big_cluster_is_written_page_by_page_as_take_snapshot_reads_it(fake: FakeApiServer, kubeconfig: str,
                                                                         tmp_path: Path, fmt: str) -> None:
    _many(fake)
    expected = take_snapshot(_fast_transport(kubeconfig), page_size=PAGE).objects
    fake.requests.clear()
    out = tmp_path / f"snap.{fmt}"
    result = CliRunner().invoke(cli, ["snapshot", "--kubeconfig", kubeconfig, "-o", str(out), "--page-size", str(PAGE)])
    assert result.exit_code == 0, result.output + result.stderr

    items = _items(out, fmt)
    assert items == expected  # the same objects, in the same order
    if fmt != "jsonl":  # and the very text of the List dumped at once
        assert out.read_text() == _whole(expected, fmt)
    kinds = [i["kind"] for i in items]
    assert kinds.index("Namespace") < kinds.index("PriorityClass") < kinds.index("Node") \
        < kinds.index("Deployment") < kinds.index("Pod")
    assert kinds.count("Pod") == PODS and kinds.count("Node") == 12  # the 40 finished pods are left out
    assert all(i["status"]["phase"] == "Running" for i in items if i["kind"] == "Pod")
    text = out.read_text()
    assert "hunter2" not in text and "secret-" not in text and "spec.nodeName" in text
    # paginated: a request per page of pods, only GETs
    pod_lists = fake.requests_matching("GET", r"^/api/v1/pods$")
    assert len(pod_lists) == (PODS + 40) // PAGE + 1
    assert [bool(r.query.get("continue")) for r in pod_lists] == [False] + [True] * (len(pod_lists) - 1)
    assert {r.method for r in fake.requests} == {"GET"}
    assert not list(tmp_path.glob(f".snap.{fmt}.*"))
    assert result.stderr.splitlines()[-1] == (f"wrote 3,016 objects (3,000 pods, 12 nodes, 2 namespaces, "
                                              f"1 priorityclass, 1 deployment) to {out}")
    assert "pods: 3,040 read, 40 finished left out" in result.stderr


class _Watching:
    """A transport that notes, before each request for a further page of pods, how many pods the
    temporary file already holds."""

    def __init__(self, inner: Transport, directory: Path, marker: str) -> None:
        self.inner, self.directory, self.marker = inner, directory, marker
        self.written_before: list[int] = []

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        if path == "/api/v1/pods" and (kwargs.get("query") or {}).get("continue"):
            (tmp,) = self.directory.glob(".snap.*.tmp")
            self.written_before.append(tmp.read_text().count(self.marker))
        return self.inner.call(method, path, **kwargs)


@pytest.mark.parametrize(("fmt", "marker"), [("yaml", "\n  kind: Pod\n"), ("json", '"kind": "Pod"'),
                                             ("jsonl", '"kind":"Pod"')])
def test_each_page_is_on_disk_before_the_next_is_requested(fake: FakeApiServer, kubeconfig: str, tmp_path: Path,
                                                           fmt: str, marker: str) -> None:
    _many(fake, pods=1000, finished=0)
    transport = _Watching(_fast_transport(kubeconfig), tmp_path, marker)
    target = tmp_path / f"snap.{fmt}"
    pages = iter_snapshot(transport, page_size=PAGE)  # type: ignore[arg-type]
    counts = write_snapshot_file(pages, target, fmt)
    # page k of the pods is in the file when page k+1 is asked for: the writer keeps no page back
    assert transport.written_before == [PAGE * k for k in range(1, 1000 // PAGE)]
    assert sum(counts.values()) == 1000 + 12 + 2 + 1 + 1
    assert target.read_text().count(marker) == 1000


def _fail_from(fake: FakeApiServer, path: str, nth: int, status: int = 500) -> Fault:
    """The ``nth`` GET of ``path`` and every one after it (retries included) answer ``status``."""
    fault = Fault(method="GET", path=path, status=None, times=-1)

    def count(_server: FakeApiServer) -> None:
        if fault.hits >= nth:
            fault.status = status

    fault.action = count
    return fake.inject(fault)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_failure_midway_leaves_the_previous_file_and_no_temporary_file(
        fake: FakeApiServer, kubeconfig: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    _many(fake, pods=1000, finished=0)
    monkeypatch.setattr(kube_snapshot, "snapshot_transport", lambda config, _context: _fast_transport(config))
    _fail_from(fake, r"^/api/v1/pods$", nth=4)  # pages 1-3 of the pods are written first
    out = tmp_path / f"snap.{fmt}"
    out.write_text("the previous snapshot\n")
    result = CliRunner().invoke(cli, ["snapshot", "--kubeconfig", kubeconfig, "-o", str(out), "--format", fmt,
                                      "--page-size", str(PAGE)])
    assert result.exit_code == 2
    assert "error: reading the cluster failed: 500 listing pods: injected fault" in result.stderr
    assert "pods: 300 read" not in result.stderr  # a resource's line is written once it is read
    assert out.read_text() == "the previous snapshot\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kubeconfig", out.name]


def test_a_403_after_the_first_page_fails_rather_than_keep_part_of_a_resource(
        fake: FakeApiServer, kubeconfig: str) -> None:
    _many(fake, pods=300, finished=0)
    _fail_from(fake, r"^/api/v1/pods$", nth=2, status=403)
    with pytest.raises(ApiError, match="listing pods"):
        take_snapshot(_fast_transport(kubeconfig), page_size=PAGE)


def test_a_403_on_the_first_page_is_a_warning_while_the_rest_streams(fake: FakeApiServer, kubeconfig: str,
                                                                     tmp_path: Path) -> None:
    _many(fake, pods=300, finished=0)
    fake.inject(Fault(method="GET", path="/apis/apps/v1/deployments", status=403, times=-1))
    out = tmp_path / "snap.jsonl"
    result = CliRunner().invoke(cli, ["snapshot", "--kubeconfig", kubeconfig, "-o", str(out), "--page-size", "50"])
    assert result.exit_code == 0, result.stderr
    assert "warning: cannot list deployments" in result.stderr
    assert "grant verb list on resource deployments in apiGroup apps" in result.stderr
    kinds = [json.loads(line)["kind"] for line in out.read_text().splitlines()]
    assert "Deployment" not in kinds and kinds.count("Pod") == 300


def test_standard_output_gets_a_yaml_list_by_default(fake: FakeApiServer, kubeconfig: str) -> None:
    _many(fake, pods=120, finished=3)
    result = CliRunner().invoke(cli, ["snapshot", "--kubeconfig", kubeconfig, "-o", "-", "--page-size", "25"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == _whole(take_snapshot(_fast_transport(kubeconfig)).objects, "yaml")
    assert result.stderr.splitlines()[-1].endswith("to standard output")


def test_the_format_follows_the_suffix_unless_given() -> None:
    assert [format_of(name, None) for name in ("-", "a.yaml", "a.yml", "a", "a.JSON", "a.jsonl", "a.ndjson")] == \
        ["yaml", "yaml", "yaml", "yaml", "json", "jsonl", "jsonl"]
    assert format_of("a.yaml", "json") == "json"


AWKWARD = [
    {"apiVersion": "v1", "kind": "ConfigLike", "metadata": {"name": "é-ü", "annotations": {
        "long": "word " * 60, "lines": "one\ntwo\n\n  indented three\n", "quote": "'\"", "empty": "",
        "number": "0123", "bool": "yes", "null": "null", "colon": "a: b", "dash": "- x"}},
     "data": {"list": [], "map": {}, "nested": [[1, 2], {"a": None}], "float": 1.5, "big": 2 ** 70}},
    {},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
]


@pytest.mark.parametrize("fmt", ["yaml", "json"])
@pytest.mark.parametrize("pages", [[], [AWKWARD], [AWKWARD[:1], [], AWKWARD[1:]]])
def test_pages_written_one_by_one_are_the_list_dumped_at_once(tmp_path: Path, fmt: str,
                                                              pages: list[list[dict[str, Any]]]) -> None:
    path = tmp_path / "list"
    with path.open("w", encoding="utf-8") as f:
        writer = ListWriter(f, fmt)
        writer.start()
        for page in pages:
            writer.page(page)
        writer.finish()
    items = [item for page in pages for item in page]
    assert path.read_text() == _whole(items, fmt)
    assert _items(path, fmt) == items


def test_on_a_terminal_the_count_line_is_rewritten_page_by_page(capsys: pytest.CaptureFixture[str]) -> None:
    from kubesched.cli.snapshot import ProgressLine
    from kubesched.cluster.kube.resources import NAMESPACE, NODE_RESOURCE_TOPOLOGY, POD
    from kubesched.cluster.kube.snapshot import Page

    progress = ProgressLine(tty=True)
    pod = {"kind": "Pod"}
    for page in (Page(NAMESPACE, [pod, pod], 2, True), Page(NODE_RESOURCE_TOPOLOGY, [], 0, True, served=False),
                 Page(POD, [pod] * 500, 500, False), Page(POD, [pod] * 499, 1000, False)):
        progress(page)
    progress.end(keep=True)  # a failure: the count stays above the error
    lines = capsys.readouterr().err.split("\n")
    assert lines[0] == "\rnamespaces: 2 read"
    unserved = "noderesourcetopologies: not served"
    assert lines[1] == (f"\r{unserved}\r" + "pods: 500 read".ljust(len(unserved))  # blanks over the longer line
                        + "\rpods: 1,000 read, 1 finished left out")
    assert lines[2:] == [""]
    progress(Page(POD, [], 1000, True))
    progress.end(keep=False)  # success: no line left open
    assert capsys.readouterr().err == "\rpods: 1,000 read, 1 finished left out\n"
