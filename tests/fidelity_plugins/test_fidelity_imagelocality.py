"""ImageLocality pinned against upstream v1.28 ``imagelocality/image_locality.go``."""

from __future__ import annotations

import pytest

from kubesched.scheduler.plugins.imagelocality import (
    MAX_CONTAINER_THRESHOLD,
    MIN_THRESHOLD,
    calculate_priority,
    normalized_image_name,
)


@pytest.mark.parametrize(
    ("total", "containers", "expected"),
    [
        (0, 1, 0),
        (MIN_THRESHOLD, 1, 0),
        (MAX_CONTAINER_THRESHOLD, 1, 100),
        (5 * MAX_CONTAINER_THRESHOLD, 2, 100),
        (500 * 1024 * 1024, 1, 100 * (500 - 23) // (1000 - 23)),
        # no containers: maxThreshold = 0; the lower clamp wins, (23MB-23MB)/(0-23MB) = 0
        (0, 0, 0),
    ],
)
def test_calculate_priority_clamps_like_upstream(total: int, containers: int, expected: int) -> None:
    """``calculatePriority``: ``if sum < minThreshold {sum = min} else if sum > maxThreshold {sum = max}``,
    then ``MaxNodeScore*(sum-min)/(max-min)`` with Go integer division."""
    assert calculate_priority(total, containers) == expected


@pytest.mark.parametrize(
    ("image", "normalized"),
    [("nginx", "nginx:latest"), ("nginx:1.25", "nginx:1.25"), ("localhost:5000/app", "localhost:5000/app:latest"),
     ("repo/app@sha256:abc", "repo/app@sha256:abc"), ("", ":latest")],
)
def test_normalized_image_name(image: str, normalized: str) -> None:
    """``normalizedImageName``: append ``:latest`` when the last ``:`` is not after the last ``/``."""
    assert normalized_image_name(image) == normalized


def test_image_size_is_the_cluster_wide_first_seen_size_when_the_snapshot_knows_it() -> None:
    """``cacheImpl.addNodeImageStates`` (internal/cache/cache.go): ``ImageStateSummary.Size`` comes
    from the first node that reported the image, for every node; ``scaledImageScore`` then scales it
    by NumNodes/totalNodes (spread computed first, as float64)."""
    from kubesched.scheduler.framework.interface import CycleState
    from kubesched.scheduler.framework.types import PodInfo
    from kubesched.scheduler.plugins.imagelocality import ImageLocality
    from kubesched.testkit.framework import FakeHandle, cache_of

    from ._fixtures import node_obj, pod_obj

    mb = 1024 * 1024
    # the scheduler cache knows the first-seen size; a plain list of nodes only each node's own
    cache = cache_of([node_obj("a", images=[{"names": ["app:1"], "sizeBytes": 500 * mb}]),
                      node_obj("b", images=[{"names": ["app:1"], "sizeBytes": 900 * mb}]), node_obj("c")])
    a, b, c = cache.node_infos

    pod = PodInfo.from_pod(pod_obj(containers=[{"name": "c", "image": "app:1"}]))
    expected_a = calculate_priority(int(500 * mb * (2 / 3)), 1)
    plugin = ImageLocality({}, FakeHandle(cache))
    assert [plugin.score(CycleState(), pod, n) for n in (a, b, c)] == [expected_a, expected_a, 0]
    per_node = ImageLocality({}, FakeHandle([a, b, c]))
    assert per_node.score(CycleState(), pod, b) == calculate_priority(int(900 * mb * (2 / 3)), 1)
