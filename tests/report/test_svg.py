"""Chart labels as a reader sees them in the SVG text (the browser tests check their layout)."""

from __future__ import annotations

import re

from kubesched.report.html import node_chart
from kubesched.report.svg import shorten_distinct
from kubesched.testkit.dumps.cluster import ClusterDump


def test_bar_labels_of_eks_nodes_are_distinct_with_the_full_name_as_tooltip() -> None:
    dump = ClusterDump()
    names = [node["metadata"]["name"] for node in dump.eks_nodegroup("general", 20)]
    rows = [{"node": name, "cpu": {"requested": "1", "allocatable": "4"},
             "memory": {"requested": "1Gi", "allocatable": "16Gi"}} for name in names]
    labels = re.findall(r'<text class="category"[^>]*>([^<]*)<title>([^<]*)</title>', node_chart(rows))
    assert [full for _, full in labels] == names
    shown = [label for label, _ in labels]
    assert len(set(shown)) == 20  # not "ip-10-0-0-1…ute.internal" for ip-10-0-0-10 to ip-10-0-0-19
    assert all(len(label) <= 24 and name.startswith(label.rstrip("…")) for label, name in zip(shown, names))


def test_names_are_shortened_only_where_they_stay_distinct() -> None:
    pods = ["shop/web-7d4b9c5f8-x2k9p", "shop/web-7d4b9c5f8-z8q4r", "shop/worker-6c9d7-abcde"]
    assert shorten_distinct(pods, 16) == ["shop/we…f8-x2k9p", "shop/we…f8-z8q4r", "shop/wo…d7-abcde"]
    eks = ["ip-10-0-1-17.us-west-2.compute.internal", "ip-10-0-1-170.us-west-2.compute.internal"]
    assert shorten_distinct(eks, 20) == ["ip-10-0-1-17…", "ip-10-0-1-170…"]  # the shared domain goes
    alike = ["team-a-web-1", "team-b-web-1", "team-c-web-2"]
    assert shorten_distinct(alike, 8) == ["team-a-web-1", "team-b-web-1", "tea…eb-2"]  # "tea…eb-1" twice: whole
    assert shorten_distinct(["short", "names"], 10) == ["short", "names"]
