"""The background writer of a failed cycle's status patches: one pod's patches stay in order, a
failed patch is counted and does not stop the others, and closing sends what is queued."""

from __future__ import annotations

import threading
import time

from kubesched.cluster.kube.statuswriter import StatusWriter
from kubesched.k8s.objects import ApiError


def test_patches_of_one_pod_are_sent_in_order_while_other_pods_go_on() -> None:
    writer = StatusWriter(lanes=3)
    sent: dict[str, list[int]] = {}
    lock = threading.Lock()

    def write(pod: str, n: int) -> None:
        time.sleep(0.001 * (n % 3))  # uneven answers: order must come from the lanes, not luck
        with lock:
            sent.setdefault(pod, []).append(n)

    for n in range(30):
        for pod in ("default/a", "default/b", "kube-system/c", "default/d"):
            writer.submit(pod, lambda pod=pod, n=n: write(pod, n))
    assert writer.wait_idle(30.0)
    writer.close(1.0)
    assert sent == {pod: list(range(30)) for pod in ("default/a", "default/b", "kube-system/c", "default/d")}


def test_a_refused_patch_is_counted_and_the_next_ones_are_sent() -> None:
    writer = StatusWriter(lanes=1)
    sent: list[str] = []

    def refused() -> None:
        raise ApiError(404, "NotFound", 'pods "gone" not found')

    writer.submit("default/gone", refused)
    writer.submit("default/here", lambda: sent.append("here"))
    writer.close(10.0)
    assert writer.failed == 1
    assert sent == ["here"]


def test_close_sends_what_is_queued() -> None:
    writer = StatusWriter(lanes=2)
    release = threading.Event()
    sent: list[int] = []
    writer.submit("default/slow", release.wait)
    for n in range(5):
        writer.submit("default/slow", lambda n=n: sent.append(n))
    threading.Timer(0.05, release.set).start()
    writer.close(10.0)
    assert sent == [0, 1, 2, 3, 4]
