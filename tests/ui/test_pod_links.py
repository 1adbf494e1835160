"""Pod links survive edits: every pod link carries the pod's identity (``?id=``), and after an edit
that gives a controller's pods other generated names a link made before it lands on the same pod
(a 307 to its new name, the page saying what it was called), with the identity or, without one,
through the previous version's names; a link to an identity the run has not is the gone/404 page
as before. The what-if page names a pod the baseline called otherwise "name (was old-name)", both
linked by identity."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
import yaml

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from kubesched.testkit.builders import make_job, make_node, make_pod, make_replicaset  # noqa: E402
from kubesched.testkit.scenarios import create_step, scenario_document, write_scenario  # noqa: E402
from kubesched.ui.podlinks import PodIds  # noqa: E402
from kubesched.ui.state import UiState  # noqa: E402

from .conftest import followed, form_fields, ui_client  # noqa: E402

WEB = "default/ReplicaSet/web#"
#: a Job whose pod is created at time 0, before the ReplicaSet's (at 10 s): its name is drawn first,
#: so that every pod of web gets the name another pod of web had before the edit
EXTRA_JOB = yaml.safe_dump(make_job("extra", make_pod("extra", cpu="4", namespace=None, restartPolicy="Never")))


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    """Two 4-cpu nodes; a bare pod ``solo``; at 10 s a ReplicaSet ``web`` of three 1-cpu pods."""
    web = make_replicaset("web", 3, make_pod("web", cpu="1", namespace=None))
    path = write_scenario(tmp_path, [make_node("n1", cpu="4"), make_node("n2", cpu="4"), make_pod("solo", cpu="100m"),
                                     scenario_document(steps=[create_step("10s", web)], seed=1)])
    return ui_client(UiState.load(str(path)))


def _web(client: TestClient) -> dict[str, str]:
    """identity -> pod key of web's pods in the run shown now."""
    pods = client.get("/api/result").json()["pods"]
    return {p["identity"]: key for key, p in pods.items() if p["identity"].startswith(WEB)}


def _links(html: str) -> list[tuple[str, dict[str, list[str]]]]:
    """Every pod page link of a page: (path, query)."""
    return [(urlsplit(h).path, parse_qs(urlsplit(h).query))
            for h in re.findall(r'href="(/pods/[^"?]+[^"]*)"', unescape(html))]


def _edit(client: TestClient) -> None:
    """The Job added through the edit page's form, its job followed to the end (version 2)."""
    answer = client.post("/edit", data={**form_fields(client), "yaml": EXTRA_JOB}, follow_redirects=False)
    job = followed(client, answer)
    assert job["state"] == "done" and job["version"] == 2, job


def _path(key: str) -> str:
    return "/pods/" + key


def _notice(html: str) -> str | None:
    found = re.search(r'<p id="pod-renamed"[^>]*>([^<]*)</p>', html)
    return unescape(found.group(1)) if found else None


def _h1(html: str) -> str:
    found = re.search(r'<h1 id="pod-name">([^<]*)</h1>', html)
    assert found is not None
    return unescape(found.group(1))


def test_every_pod_link_carries_its_pods_identity(client: TestClient) -> None:
    identity = {k: p["identity"] for k, p in client.get("/api/result").json()["pods"].items()}
    some = sorted(_web(client).values())[0]
    node = client.get("/api/result").json()["pods"][some]["node"]
    for page in ("/", "/pods", "/timeline", f"/nodes/{node}", _path(some)):
        html = client.get(page).text
        for path, query in _links(html):
            key = "/".join(p for p in path.split("/")[2:])
            assert query.get("id") == [identity[key]], (page, path, query)
    links = dict(_links(client.get("/pods").text))
    assert len(links) == len(identity) == 4  # solo and web's three
    # URL-encoded in the page: the identity's / and # are not read as the path's or a fragment
    assert f'href="/pods/{some}?id={quote(identity[some], safe="")}"' in client.get("/pods").text


def test_an_old_link_finds_the_same_pod_after_an_edit_renamed_it(client: TestClient) -> None:
    before = _web(client)
    assert sorted(before) == [f"{WEB}{n}" for n in range(3)]
    _edit(client)
    after = _web(client)
    assert sorted(after) == sorted(before)
    # the edit drew the Job's name first: every pod of web has another name, and a name both versions
    # have is another pod in each
    assert all(before[i] != after[i] for i in before)
    assert set(before.values()) & set(after.values())

    for identity, old in before.items():
        link = f"{_path(old)}?id={quote(identity, safe='')}"
        answer = client.get(link, follow_redirects=False)
        assert answer.status_code == 307, (link, answer.text)
        target = urlsplit(answer.headers["location"])
        assert target.path == _path(after[identity])
        assert parse_qs(target.query)["id"] == [identity]
        page = client.get(link)  # followed
        assert page.status_code == 200 and _h1(page.text) == after[identity]
        assert _notice(page.text) == (f"This pod was {old} in version 1; it is {after[identity]} in version 2 "
                                      f"(identity {identity}).")
        # the page's own pod links are the new name's, by the same identity
        assert (_path(after[identity]), {"id": [identity]}) in _links(client.get("/pods").text)

    # a link to the new name with its identity is the page, no redirect and no notice
    for identity, new in after.items():
        page = client.get(f"{_path(new)}?id={quote(identity, safe='')}", follow_redirects=False)
        assert page.status_code == 200 and _h1(page.text) == new and _notice(page.text) is None

    # the link's other parameters go along: a moment to diagnose at
    identity = f"{WEB}0"
    answer = client.get(f"{_path(before[identity])}?id={quote(identity, safe='')}&at=12", follow_redirects=False)
    assert answer.status_code == 307
    assert parse_qs(urlsplit(answer.headers["location"]).query)["at"] == ["12"]


def test_a_link_without_identity_finds_its_pod_through_the_previous_versions_names(client: TestClient) -> None:
    before = _web(client)
    _edit(client)
    after = _web(client)
    gone = {i: k for i, k in before.items() if k not in after.values()}
    assert gone  # names of version 1 that version 2 has not
    for identity, old in gone.items():
        answer = client.get(_path(old), follow_redirects=False)
        assert answer.status_code == 307
        assert urlsplit(answer.headers["location"]).path == _path(after[identity])
        page = client.get(_path(old))
        assert _h1(page.text) == after[identity]
        assert _notice(page.text) == (f"This pod was {old} in version 1; it is {after[identity]} in version 2 "
                                      f"(identity {identity}).")
    # a name version 2 has is that pod's page, as before (without an identity a name means this run's pod)
    for new in after.values():
        page = client.get(_path(new), follow_redirects=False)
        assert page.status_code == 200 and _h1(page.text) == new and _notice(page.text) is None


def test_a_link_to_an_identity_the_run_has_not_is_the_gone_or_404_page_as_before(client: TestClient) -> None:
    before = _web(client)
    _edit(client)
    after = _web(client)
    missing = quote(f"{WEB}9", safe="")
    gone_name = next(k for k in before.values() if k not in after.values())
    answer = client.get(f"{_path(gone_name)}?id={missing}", follow_redirects=False)
    plain = client.get("/pods/default/no-such-pod", follow_redirects=False)
    assert answer.status_code == plain.status_code == 404
    name = gone_name.split("/")[1]  # explain's words, as for any pod the run has not
    assert f'<p class="error" id="error">pods "{name}" not found in namespace "default"</p>' in unescape(answer.text)
    # a name this run has, with an identity it has not: that name's page, saying it is another pod
    shared = next(k for k in after.values() if k in before.values())
    page = client.get(f"{_path(shared)}?id={missing}", follow_redirects=False)
    assert page.status_code == 200 and _h1(page.text) == shared
    now = next(i for i, k in after.items() if k == shared)
    assert _notice(page.text) == (f"The link was to the pod of identity {WEB}9, which version 2 has not: "
                                  f"{shared} is another pod (identity {now}).")
    # an input pod keeps its name and its identity
    solo = client.get(f"/pods/default/solo?id={quote('default/solo', safe='')}", follow_redirects=False)
    assert solo.status_code == 200 and _notice(solo.text) is None


def test_previous_versions_names_are_kept_for_a_few_versions() -> None:
    def result(pods: dict[str, str]) -> dict[str, Any]:
        return {"pods": {k: {"identity": i} for k, i in pods.items()}}

    v1 = PodIds.of_result(result({"ns/a-1": "ns/Job/a#0", "ns/s": "ns/s"}))
    v2 = PodIds.of_result(result({"ns/a-2": "ns/Job/a#0", "ns/s": "ns/s"}), 2, v1)
    v3 = PodIds.of_result(result({"ns/a-3": "ns/Job/a#0", "ns/s": "ns/s"}), 3, v2)
    assert v3.earlier == {"ns/a-1": ("ns/Job/a#0", 1), "ns/a-2": ("ns/Job/a#0", 2), "ns/s": ("ns/s", 2)}
    found = v3.find("ns/a-1", None)
    assert found is not None and (found.key, found.version) == ("ns/a-3", 1)
    assert v3.find("ns/s", None) is None and v3.find("ns/s", "ns/s") is None
    assert v3.find("ns/b", None) is None and v3.find("ns/a-1", "ns/Job/a#7") is None
    ids = v3
    for version in range(4, 13):
        ids = PodIds.of_result(result({f"ns/a-{version}": "ns/Job/a#0"}), version, ids)
    assert "ns/a-1" not in ids.earlier and ids.earlier["ns/a-11"] == ("ns/Job/a#0", 11)


def test_the_whatif_page_names_a_renamed_pod_and_links_both_names_by_identity(client: TestClient) -> None:
    answer = client.post("/whatif", data={**form_fields(client, "/whatif"), "apply": EXTRA_JOB}, follow_redirects=False)
    job = followed(client, answer)
    assert job["state"] == "done", job
    diff = client.get(job["apiResult"]).json()
    assert diff["moved"] and all(m["pod"] != m["baselinePod"] for m in diff["moved"])
    html = client.get(job["result"]).text
    moved = re.search(r'<ul id="whatif-moved">(.*?)</ul>', html, re.S)
    assert moved is not None
    items = re.findall(r"<li>(.*?)</li>", moved.group(1), re.S)
    assert len(items) == len(diff["moved"])
    for entry, item in zip(diff["moved"], items, strict=True):
        text = unescape(re.sub(r"<[^>]+>", "", item))
        assert text.startswith(f"{entry['pod']} (was {entry['baselinePod']}) {entry['from']} → {entry['to']}")
        links = _links(item)
        assert links == [(_path(entry["pod"]), {"id": [entry["identity"]]}),
                         (_path(entry["baselinePod"]), {"id": [entry["identity"]]})]
        # both land on the shown run's (the baseline's) pod of that identity
        for path, _ in links:
            page = client.get(f"{path}?id={quote(entry['identity'], safe='')}")
            assert _h1(page.text) == entry["baselinePod"]
    started = re.search(r'<ul id="whatif-started">(.*?)</ul>', html, re.S)
    assert started is not None and "(was" not in started.group(1)  # the Job's pod: the baseline has none


def test_the_apis_pod_documents_take_the_identity_as_the_page_does(client: TestClient) -> None:
    before = _web(client)
    _edit(client)
    after = _web(client)
    for identity, old in before.items():
        new, quoted = after[identity], quote(identity, safe="")
        for rest in ("", "/nodes", "/attempts", "/scores", "/history"):
            answer = client.get(f"/api{_path(old)}{rest}?id={quoted}&offset=0", follow_redirects=False)
            assert answer.status_code == 307, (old, rest, answer.text)
            target = urlsplit(answer.headers["location"])
            assert target.path == f"/api{_path(new)}{rest}"
            assert parse_qs(target.query) == {"id": [identity], "was": [old], "was_in": ["1"], "offset": ["0"]}
            assert client.get(answer.headers["location"]).status_code == 200
        assert client.get(f"/api{_path(old)}?id={quoted}").json()["pod"] == new  # followed: the new name's
        assert client.get(f"/api{_path(old)}/history?id={quoted}").json()["pod"] == new
        # the new name with its identity is answered as it is
        assert client.get(f"/api{_path(new)}?id={quoted}", follow_redirects=False).status_code == 200
    # without an identity, an old name that is no pod of this run leads through the earlier names;
    # an identity the run has not leaves the name's own answer (here: explain's 404)
    gone = next(old for old in before.values() if old not in after.values())
    answer = client.get(f"/api{_path(gone)}/scores", follow_redirects=False)
    assert answer.status_code == 307
    assert urlsplit(answer.headers["location"]).path == f"/api{_path(after[next(i for i, k in before.items() if k == gone)])}/scores"
    assert client.get(f"/api{_path(gone)}?id=nobody", follow_redirects=False).status_code == 404
