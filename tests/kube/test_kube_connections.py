"""The API client's own connections: kept alive between requests, TLS from the kubeconfig (CA,
client certificate, ``insecure-skip-tls-verify``), and credentials asked for again on a 401."""

from __future__ import annotations

import base64
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from fakeapi import FakeApiServer

from kubesched.cluster.kube import ClientOptions, Transport, load_api_client
from kubesched.k8s.http import TLSConnection
from kubesched.k8s.objects import ApiError

OPTIONS = ClientOptions(qps=0, max_attempts=3, retry_initial=0.01, retry_cap=0.05, connect_timeout=2.0)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def write_kubeconfig(path: Path, server: str, cluster: str, user: str) -> str:
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: c\n  cluster:\n    server: {server}\n{cluster}"
        f"users:\n- name: u\n  user:\n{user}"
        "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n"
        "current-context: x\n"
    )
    return str(path)


def served(server: FakeApiServer) -> Iterator[FakeApiServer]:
    server.start()
    yield server
    server.stop()


@pytest.fixture
def idle_closing() -> Iterator[FakeApiServer]:
    yield from served(FakeApiServer(idle_timeout=0.2))


def test_requests_share_a_connection_and_one_the_server_closed_is_replaced(idle_closing: FakeApiServer,
                                                                           tmp_path: Path) -> None:
    client = Transport(load_api_client(idle_closing.kubeconfig(tmp_path)), OPTIONS)
    for _ in range(20):
        assert client.call("GET", "/api/v1/namespaces/default")["metadata"]["name"] == "default"
    assert idle_closing.connections == 1
    time.sleep(0.5)  # the server drops the idle connection
    assert client.call("GET", "/api/v1/namespaces/kube-system")["metadata"]["name"] == "kube-system"
    assert idle_closing.connections == 2
    assert client.retries == 0  # the closed connection was noticed before it was used


@pytest.fixture
def cas() -> tuple[trustme.CA, trustme.CA]:
    return trustme.CA(), trustme.CA()


@pytest.fixture
def mutual_tls(cas: tuple[trustme.CA, trustme.CA]) -> Iterator[FakeApiServer]:
    server_ca, client_ca = cas
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ca.issue_cert("127.0.0.1").configure_cert(context)
    context.verify_mode = ssl.CERT_REQUIRED
    client_ca.configure_trust(context)
    yield from served(FakeApiServer(tls=context))


def test_tls_from_the_kubeconfig(mutual_tls: FakeApiServer, cas: tuple[trustme.CA, trustme.CA],
                                 tmp_path: Path) -> None:
    server_ca, client_ca = cas
    cert = client_ca.issue_cert("kubesched")
    user = (f"    client-certificate-data: {b64(cert.cert_chain_pems[0].bytes())}\n"
            f"    client-key-data: {b64(cert.private_key_pem.bytes())}\n")
    trusted = f"    certificate-authority-data: {b64(server_ca.cert_pem.bytes())}\n"
    stranger = f"    certificate-authority-data: {b64(trustme.CA().cert_pem.bytes())}\n"

    def client(name: str, cluster: str, user: str) -> Transport:
        return Transport(load_api_client(write_kubeconfig(tmp_path / name, mutual_tls.url, cluster, user)), OPTIONS)

    assert mutual_tls.url.startswith("https://")
    assert client("ok", trusted, user).call("GET", "/api/v1/namespaces/default")["metadata"]["name"] == "default"
    insecure = client("insecure", "    insecure-skip-tls-verify: true\n", user)
    assert insecure.call("GET", "/api/v1/namespaces/default")["metadata"]["name"] == "default"
    for refused in (client("stranger", stranger, user), client("no-cert", trusted, "    token: t\n")):
        with pytest.raises(ApiError) as err:
            refused.call("GET", "/api/v1/namespaces/default")
        assert err.value.code == 503 and "connection to the API server failed" in err.value.message


@pytest.fixture
def token_server() -> Iterator[FakeApiServer]:
    yield from served(FakeApiServer(token="first"))


def test_a_rejected_credential_is_asked_for_again(token_server: FakeApiServer, tmp_path: Path) -> None:
    api_client = load_api_client(write_kubeconfig(tmp_path / "k", token_server.url, "", "    token: first\n"))
    current = ["first"]
    asked = []

    def refresh(configuration: object) -> None:  # as the client's exec and token-file hooks do
        asked.append(current[0])
        configuration.api_key["BearerToken"] = f"Bearer {current[0]}"  # type: ignore[attr-defined]

    api_client.configuration.refresh_api_key_hook = refresh
    client = Transport(api_client, OPTIONS)
    for _ in range(30):
        client.call("GET", "/api/v1/namespaces/default")
    assert asked == ["first"]  # the header is reused, not asked for per request

    current[0] = token_server.token = "second"  # the credential rotates
    assert client.call("GET", "/api/v1/namespaces/default")["metadata"]["name"] == "default"
    assert asked == ["first", "second"]
    codes = [r.status for r in token_server.requests if r.path == "/api/v1/namespaces/default"]
    assert codes[-2:] == [401, 200] and codes.count(401) == 1

    token_server.token = "third"  # a credential nobody can refresh: the 401 is the answer
    with pytest.raises(ApiError) as err:
        client.call("GET", "/api/v1/namespaces/default")
    assert err.value.code == 401


def test_tls_connections_send_small_writes_at_once(cas: tuple[trustme.CA, trustme.CA]) -> None:
    """Headers and body leave in separate writes: without TCP_NODELAY the body would wait for the
    server's delayed ACK (about 40 ms per request on Linux)."""
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cas[0].issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    cas[0].configure_trust(client_context)
    for server in served(FakeApiServer(tls=server_context)):
        conn = TLSConnection("127.0.0.1", int(server.url.rsplit(":", 1)[1]), client_context, "", 2.0)
        conn.request("GET", "/api/v1/namespaces/default")
        assert conn.getresponse().status == 200
        assert conn.sock is not None
        assert conn.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        conn.close()
