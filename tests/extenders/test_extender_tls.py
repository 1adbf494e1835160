"""Extenders over HTTPS, with certificates made for the test (trustme): upstream's ``enableHTTPS``
and ``tlsConfig`` semantics against a real TLS server on loopback."""

from __future__ import annotations

import base64
import ssl
from pathlib import Path
from typing import Any

import trustme

from kubesched.testkit.builders import make_node, make_pod
from kubesched.testkit.extender_server import extender_server, keep_nodes
from kubesched.testkit.runs import ScenarioRun, run_docs
from kubesched.testkit.scenarios import scenario_document


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def schedule(tmp_path: Path, extender: dict[str, Any]) -> ScenarioRun:
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "extenders": [{"filterVerb": "filter", **extender}]}
    return run_docs(tmp_path, [scenario_document(config=config, until="0s"), make_node("n0"), make_node("n1"),
                               make_pod("p")])


def server_context(ca: trustme.CA, *, client_ca: trustme.CA | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "extender.example").configure_cert(context)
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        client_ca.configure_trust(context)
    return context


def test_enable_https_without_a_ca_does_not_verify_and_a_ca_verifies(tmp_path: Path) -> None:
    ca, stranger = trustme.CA(), trustme.CA()
    with extender_server(server_context(ca)) as ext:
        ext.answers["filter"] = keep_nodes(lambda n: n == "n1")
        assert schedule(tmp_path, {"urlPrefix": ext.url, "enableHTTPS": True}).node_of("p") == "n1"
        trusted = {"caData": b64(ca.cert_pem.bytes())}
        assert schedule(tmp_path, {"urlPrefix": ext.url, "tlsConfig": trusted}).node_of("p") == "n1"
        ca_file = tmp_path / "ca.pem"
        ca.cert_pem.write_to_path(str(ca_file))
        assert schedule(tmp_path, {"urlPrefix": ext.url, "tlsConfig": {"caFile": str(ca_file)}}).node_of("p") == "n1"

        wrong_ca = schedule(tmp_path, {"urlPrefix": ext.url, "tlsConfig": {"caData": b64(stranger.cert_pem.bytes())}})
        wrong_name = schedule(tmp_path, {"urlPrefix": ext.url,
                                         "tlsConfig": {**trusted, "serverName": "someone-else.example"}})
        named = schedule(tmp_path, {"urlPrefix": ext.url,
                                    "tlsConfig": {**trusted, "serverName": "extender.example"}})
        insecure = schedule(tmp_path, {"urlPrefix": ext.url, "tlsConfig": {"insecure": True}})
    for refused in (wrong_ca, wrong_name):
        assert refused.node_of("p") is None
        assert refused.failed("p")[0][1].startswith(f'Post "{ext.url}/filter": tls: ')
    assert named.node_of("p") == "n1"
    assert insecure.node_of("p") == "n1"


def test_a_client_certificate_is_presented_when_configured(tmp_path: Path) -> None:
    ca, clients = trustme.CA(), trustme.CA()
    client = clients.issue_cert("kubesched")
    key_file = tmp_path / "client.key"
    client.private_key_pem.write_to_path(str(key_file))
    with extender_server(server_context(ca, client_ca=clients)) as ext:
        ext.answers["filter"] = keep_nodes(lambda n: n == "n0")
        trusted = {"caData": b64(ca.cert_pem.bytes())}
        with_data = schedule(tmp_path, {"urlPrefix": ext.url, "tlsConfig": {
            **trusted, "certData": b64(client.cert_chain_pems[0].bytes()),
            "keyData": b64(client.private_key_pem.bytes())}})
        cert_file = tmp_path / "client.crt"
        client.cert_chain_pems[0].write_to_path(str(cert_file))
        with_files = schedule(tmp_path, {"urlPrefix": ext.url, "tlsConfig": {
            **trusted, "certFile": str(cert_file), "keyFile": str(key_file)}})
        without = schedule(tmp_path, {"urlPrefix": ext.url, "tlsConfig": trusted})
    assert with_data.node_of("p") == "n0"
    assert with_files.node_of("p") == "n0"
    assert without.node_of("p") is None
    assert without.failed("p")[0][1].startswith(f'Post "{ext.url}/filter": ')
