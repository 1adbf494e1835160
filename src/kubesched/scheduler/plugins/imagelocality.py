"""ImageLocality: prefer nodes that already have the pod's images, scaled by how widespread they are."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.scheduler.framework.capabilities import ScoreVector
from kubesched.scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle, ScorePlugin
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.framework.views import NodeTableSnapshot
from kubesched.scheduler.plugins.helpers import go_div

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def _pod_images(pod: PodInfo) -> list[str]:
    spec = pod.spec
    containers = list(spec.get("initContainers") or ()) + list(spec.get("containers") or ())
    return [normalized_image_name(c.get("image") or "") for c in containers]


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """Upstream ``calculatePriority``: clamp to [minThreshold, maxThreshold] — the lower bound first,
    so a pod without containers (maxThreshold 0) scores 0 — then scale with Go integer division."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return go_div(MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)


class ImageLocality(ScorePlugin, ScoreVector):
    name = "ImageLocality"

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        self.handle = handle

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        snapshot = self.handle.snapshot()
        total_nodes = len(snapshot.node_infos)
        images = _pod_images(pod)
        # Upstream ImageStateSummary.Size is cluster-wide: the size reported by the node that first
        # brought the image into the scheduler cache.  Use the snapshot's view of it when it offers
        # one (``image_size``); otherwise this node's own reported size.
        global_size = getattr(snapshot, "image_size", None)
        total = 0
        for image in images:
            size = node.images.get(image)
            if size is not None:
                if global_size is not None:
                    first_seen = global_size(image)
                    size = size if first_seen is None else first_seen
                spread = snapshot.image_num_nodes(image) / total_nodes
                total += int(size * spread)
        return calculate_priority(total, len(images))

    def score_vector(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray
    ) -> np.ndarray:
        images = _pod_images(pod)
        if not any(snapshot.image_num_nodes(image) for image in images):
            return np.zeros(len(idx), dtype=np.int64)
        nodes = snapshot.node_infos
        return np.array([self.score(state, pod, nodes[i]) for i in idx], dtype=np.int64)
