"""The transport: client-side rate limiting, which failures are retried, and the fake server's
reproduction of the binding-response quirk that the official client's models trip over."""

from __future__ import annotations

import time

import pytest
from fakeapi import FakeApiServer, Fault

from conftest import node_of, pod
from kubesched.cluster.kube import ClientOptions, KubeCluster, Transport, load_api_client
from kubesched.cluster.kube.ratelimit import Backoff, TokenBucket
from kubesched.k8s.objects import ApiError
from kubesched.testkit.builders import make_node

pytestmark = pytest.mark.timeout(30)


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_token_bucket_allows_the_burst_then_the_rate() -> None:
    clock = FakeTime()
    bucket = TokenBucket(50, 100, monotonic=clock.monotonic, sleep=clock.sleep)
    for _ in range(100):
        assert bucket.acquire() == 0.0
    for _ in range(50):
        bucket.acquire()
    assert clock.now == pytest.approx(1.0)  # 50 more tokens at 50/s


def test_backoff_grows_to_its_cap_with_jitter() -> None:
    backoff = Backoff(0.5, 4.0, jitter=1.0)
    delays = [backoff.next() for _ in range(6)]
    for delay, base in zip(delays, (0.5, 1, 2, 4, 4, 4)):
        assert base <= delay < 2 * base
    backoff.reset()
    assert backoff.next() < 1.0


def transport(fake: FakeApiServer, kubeconfig: str, **options: float) -> Transport:
    opts = ClientOptions(**{"qps": 0.0, "max_attempts": 3, "retry_initial": 0.01, "retry_cap": 0.05, **options})
    return Transport(load_api_client(kubeconfig), opts)


def test_5xx_is_retried_then_raised_and_4xx_is_not_retried(fake: FakeApiServer, kubeconfig: str) -> None:
    client = transport(fake, kubeconfig)
    fake.inject(Fault(method="GET", path="/nodes/n1$", status=500, times=-1))
    with pytest.raises(ApiError) as err:
        client.call("GET", "/api/v1/nodes/n1")
    assert err.value.code == 500 and len(fake.requests_matching("GET", "/nodes/n1$")) == 3
    with pytest.raises(ApiError) as err:
        client.call("GET", "/api/v1/nodes/missing")
    assert (err.value.code, err.value.reason) == (404, "NotFound")
    assert len(fake.requests_matching("GET", "/nodes/missing$")) == 1


def _sleeper(fake_time: FakeTime, fake: FakeApiServer, kubeconfig: str, **options: float) -> Transport:
    opts = ClientOptions(**{"qps": 0.0, **options})  # the default max_attempts (5) and throttled retries (10)
    return Transport(load_api_client(kubeconfig), opts, sleep=fake_time.sleep)


def test_a_429_storm_longer_than_max_attempts_is_waited_out_as_client_go_does(fake: FakeApiServer,
                                                                              kubeconfig: str) -> None:
    """Seven 429s with Retry-After in a row (more than max_attempts): the binding still goes through,
    each retry after exactly the second the server asked for."""
    clock = FakeTime()
    client = _sleeper(clock, fake, kubeconfig)
    fake.create(make_node("n1"))
    fake.create(pod("p"))
    fake.inject(Fault(method="POST", path="/pods/p/binding$", status=429, retry_after=1, times=7))
    client.call("POST", "/api/v1/namespaces/default/pods/p/binding", decode=False, body={
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}})
    assert [r.status for r in fake.requests_matching("POST", "/pods/p/binding$")] == [429] * 7 + [201]
    assert clock.slept == [1.0] * 7
    assert node_of(fake, "p") == "n1"


def test_a_429_that_never_ends_is_given_up_after_ten_retries(fake: FakeApiServer, kubeconfig: str) -> None:
    clock = FakeTime()
    client = _sleeper(clock, fake, kubeconfig)
    fake.inject(Fault(method="GET", path="/nodes/n1$", status=429, retry_after=2, times=-1))
    with pytest.raises(ApiError) as err:
        client.call("GET", "/api/v1/nodes/n1")
    assert err.value.code == 429
    assert len(fake.requests_matching("GET", "/nodes/n1$")) == 11
    assert clock.slept == [2.0] * 10


def test_throttled_retries_do_not_use_up_the_attempts_for_other_failures(fake: FakeApiServer,
                                                                         kubeconfig: str) -> None:
    """5xx (and a 429 without Retry-After) count against max_attempts; 429s with Retry-After between
    them do not. Without retries (``retry=False``) a 429 is not tried again either."""
    clock = FakeTime()
    client = _sleeper(clock, fake, kubeconfig, max_attempts=3)
    fake.inject(Fault(method="GET", path="/nodes/n1$", status=500, times=1))
    fake.inject(Fault(method="GET", path="/nodes/n1$", status=429, retry_after=1, times=2))
    fake.inject(Fault(method="GET", path="/nodes/n1$", status=429, times=1))
    fake.inject(Fault(method="GET", path="/nodes/n1$", status=503, times=-1))
    with pytest.raises(ApiError) as err:
        client.call("GET", "/api/v1/nodes/n1")
    assert err.value.code == 503
    assert [r.status for r in fake.requests_matching("GET", "/nodes/n1$")] == [500, 429, 429, 429, 503]
    assert clock.slept[1:4] == [1.0, 1.0, 1.0]  # Retry-After, twice; a 429 without it waits a second
    fake.inject(Fault(method="GET", path="/nodes/n2$", status=429, retry_after=1, times=-1))
    with pytest.raises(ApiError):
        client.call("GET", "/api/v1/nodes/n2", retry=False)
    assert len(fake.requests_matching("GET", "/nodes/n2$")) == 1


def test_unreachable_server_is_a_503(kubeconfig: str, fake: FakeApiServer) -> None:
    client = transport(fake, kubeconfig, connect_timeout=0.5)
    fake.stop()
    with pytest.raises(ApiError) as err:
        client.call("GET", "/api/v1/nodes")
    assert err.value.code == 503 and "connection" in err.value.message


def test_client_qps_is_enforced(fake: FakeApiServer, kubeconfig: str) -> None:
    client = transport(fake, kubeconfig, qps=20.0, burst=1)
    start = time.monotonic()
    for _ in range(6):
        client.call("GET", "/api/v1/namespaces/default")
    assert time.monotonic() - start >= 0.24  # 5 waits of 50 ms


def test_the_fake_reproduces_the_binding_response_quirk(fake: FakeApiServer, kubeconfig: str) -> None:
    """The generated client decodes the binding's 201 ``Status`` as a ``V1Binding`` and raises although
    the pod is bound (kubernetes-client/python#547); kubesched's raw transport binds cleanly."""
    from kubernetes import client

    fake.create(make_node("n1"))
    fake.create(pod("with-models"))
    created = fake.create(pod("raw"))
    core = client.CoreV1Api(load_api_client(kubeconfig))
    body = client.V1Binding(metadata=client.V1ObjectMeta(name="with-models", namespace="default"),
                            target=client.V1ObjectReference(api_version="v1", kind="Node", name="n1"))
    with pytest.raises(ValueError):
        core.create_namespaced_pod_binding("with-models", "default", body)
    assert node_of(fake, "with-models") == "n1"  # bound all the same: a retry would get 409
    cluster = KubeCluster(load_api_client(kubeconfig), profiles=["kubesched"], client_options=ClientOptions(qps=0))
    cluster.bind(created, "n1")
    assert node_of(fake, "raw") == "n1"
    with pytest.raises(ApiError) as err:
        cluster.bind(fake.create(pod("other")) | {"metadata": {"name": "raw", "namespace": "default",
                                                                 "uid": created["metadata"]["uid"]}}, "n2")
    assert err.value.code == 409 and 'already assigned to node "n1"' in err.value.message
