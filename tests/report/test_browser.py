"""HTML reports as a reader sees them: rendered by a real browser (headless Chromium).

A script added to a copy of each report measures what the browser laid out: category labels that
overlap one another, text drawn outside its chart (cut), and the charts' tick values. The tests
need Debian's ``chromium``; without it they are skipped, unless KUBESCHED_REQUIRE_BROWSER is set
(CI sets it and installs the browser).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kubesched.analysis.whatif.changes import Changes
from kubesched.analysis.whatif.run import whatif
from kubesched.api.loader import scenario_from_objects
from kubesched.report.html import simulation_report, whatif_report
from kubesched.sim import simulate
from kubesched.testkit.builders import make_deployment, make_node, make_pod, make_priority_class

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
if BROWSER is None and os.environ.get("KUBESCHED_REQUIRE_BROWSER"):
    raise RuntimeError("KUBESCHED_REQUIRE_BROWSER is set but no chromium is installed")
pytestmark = pytest.mark.skipif(BROWSER is None, reason="needs Debian's chromium (apt-get install chromium)")

MEASURE = """
<script>
window.addEventListener('load', () => {
  const box = e => e.getBoundingClientRect();
  const overlap = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const charts = [];
  for (const svg of document.querySelectorAll('svg')) {
    const frame = box(svg);
    const texts = [...svg.querySelectorAll('text')];
    const cut = texts.filter(t => { const b = box(t); return b.width > 0 &&
      (b.left < frame.left - 1 || b.right > frame.right + 1 || b.top < frame.top - 1 || b.bottom > frame.bottom + 1); })
      .map(t => t.textContent);
    const cats = [...svg.querySelectorAll('text.category')];
    let overlaps = 0;
    for (let i = 0; i < cats.length; i++) for (let j = i + 1; j < cats.length; j++)
      if (overlap(box(cats[i]), box(cats[j]))) overlaps++;
    const title = svg.querySelector(':scope > title').textContent;
    const ticks = texts.filter(t => t.getAttribute('text-anchor') === 'end' && !t.classList.contains('category'))
      .map(t => t.textContent);
    charts.push({title, cut, overlaps, categories: cats.map(c => c.firstChild.textContent), ticks});
  }
  document.body.setAttribute('data-measured', JSON.stringify(charts));
});
</script>
"""


def _render(tmp_path: Path, html: str, name: str) -> list[dict[str, Any]]:
    page = tmp_path / f"{name}.html"
    page.write_text(html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    assert BROWSER is not None
    out = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,900",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120, check=True)
    found = re.search(r'data-measured="([^"]*)"', out.stdout)
    assert found, out.stdout[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def _big_cluster() -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [make_priority_class("batch", 10), make_priority_class("online", 1000)]
    for i in range(240):
        objects.append(make_node(f"gke-production-pool-{i % 3}-7d4b9c2f-{i:04d}", cpu="4", memory="16Gi"))
    objects.append(make_deployment("web", 300, make_pod("web", cpu="1", memory="1Gi", priority_class="batch")))
    objects.append(make_pod("checkout", cpu="3", memory="1Gi", priority_class="online"))
    return objects


def test_a_simulation_of_240_nodes_reads_without_overlapping_or_cut_labels(tmp_path: Path) -> None:
    result = simulate(scenario_from_objects(_big_cluster(), "big", "big.yaml")).result
    charts = _render(tmp_path, simulation_report(result), "simulation")
    assert [c["title"] for c in charts][:2] == [
        "Pods over time", "Nodes by requested share of allocatable at the end (240 nodes)"]
    for chart in charts:
        assert chart["cut"] == [], chart["title"]
        assert chart["overlaps"] == 0, chart["title"]
    pods_over_time = charts[0]
    assert all(float(t).is_integer() for t in pods_over_time["ticks"])  # counts: whole-number ticks


def test_few_nodes_with_long_names_get_every_label_readable(tmp_path: Path) -> None:
    objects = [make_node(f"gke-production-europe-west4-pool-highmem-{i:03d}-abcdef") for i in range(12)]
    objects.append(make_deployment("web", 20, make_pod("web", cpu="500m")))
    result = simulate(scenario_from_objects(objects, "long-names", "long.yaml")).result
    charts = _render(tmp_path, simulation_report(result), "long-names")
    per_node = next(c for c in charts if c["title"].startswith("Requested / allocatable per node"))
    assert len(per_node["categories"]) == 12
    assert len(set(per_node["categories"])) == 12  # shortened in the middle: the distinguishing end stays
    assert per_node["overlaps"] == 0 and per_node["cut"] == []


def test_a_run_that_ends_at_time_zero_and_a_whatif_report_render_cleanly(tmp_path: Path) -> None:
    objects = [make_node("n1", cpu="2"), make_pod("a", cpu="1"), make_pod("b", cpu="1")]
    scenario = scenario_from_objects(objects, "instant", "instant.yaml")
    result = simulate(scenario).result
    assert result["endTime"] == 0
    charts = _render(tmp_path, simulation_report(result), "instant")
    assert all(c["cut"] == [] and c["overlaps"] == 0 for c in charts)
    diff, _ = whatif(scenario, Changes(cordon=["n1"]))
    charts = _render(tmp_path, whatif_report(diff), "whatif")
    assert all(c["cut"] == [] and c["overlaps"] == 0 for c in charts)
