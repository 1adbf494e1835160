"""``kubesched ui`` on a big cluster, measured in a real browser (Debian's chromium through Playwright).

Loads a dump (``--dump``: e.g. the 1000-node, 20 000-pod one ``benchmarks/production_dump.py
--generate-only --keep DIR`` writes; or ``--size NODESxPODS``: a production-shaped dump of that size
built by the same code into ``--keep DIR``), simulates it as ``kubesched ui`` does, serves it with
uvicorn and times, from the browser:

* the size of the first cluster response (``GET /api/cluster`` and the ``/`` page's HTML) and the
  time the server takes to answer it;
* the first view (``/``, navigation start to the load event and the nodes of the pools open from
  the start), after the simulation is ready;
* opening the largest pool (the click to its first page of nodes), its next page, and finding a
  node by name from the search box (typing to the row shown), then opening that node's page;
* opening a pending pod from the cluster page (the click to the loaded pod page: its diagnosis,
  attempts and scores are worked out on the request), and opening it again (the diagnosis kept);
* the timeline page (its chart, counts and first page of events, rendered on the server) and the
  pods list sorted by pending time (both made with the run, before the server answers).

    python benchmarks/ui.py --dump /tmp/dumps/eks-1000n-20000p-s1.json
    python benchmarks/ui.py --size 100x2000 --keep /tmp/dumps
"""

from __future__ import annotations

import argparse
import shutil
import socket
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from kubesched.ui.app import create_app
from kubesched.ui.state import UiState

if TYPE_CHECKING:
    from playwright.sync_api import Page


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--dump", help="a scenario or kubectl dump")
    source.add_argument("--size", help="NODESxPODS: build a production-shaped dump of that size (e.g. 1000x20000)")
    parser.add_argument("--keep", help="where --size's dump is written (and found again); default: a temporary folder")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import uvicorn
    from playwright.sync_api import sync_playwright

    path = args.dump
    if args.size:
        from production_dump import ensure_dumps

        nodes, pods = (int(n) for n in args.size.lower().split("x"))
        folder = Path(args.keep or tempfile.mkdtemp(prefix="kubesched-ui-bench-"))
        folder.mkdir(parents=True, exist_ok=True)
        _, rows = ensure_dumps(folder, nodes, pods, ["json"])
        path = rows[0]["path"]
    started = time.perf_counter()
    state = UiState.load(path)
    print(f"loaded and simulated in {time.perf_counter() - started:.1f} s: {len(state.result['nodes'])} nodes, "
          f"{len(state.result['pods'])} pods", flush=True)
    if hasattr(state, "view"):  # the cluster summed by pool and zone, made with the run
        from kubesched.ui.cluster import ClusterView

        started = time.perf_counter()
        ClusterView.of(state.outcome)
        print(f"the cluster's sums and node lists made in {(time.perf_counter() - started) * 1000:.0f} ms", flush=True)
    if hasattr(state.snapshot, "pods"):  # the pods list's index and the timeline, made with the run too
        from kubesched.ui.podindex import PodIndex
        from kubesched.ui.runtimeline import RunTimeline

        started = time.perf_counter()
        PodIndex.of(state.outcome).facets()
        made = time.perf_counter()
        RunTimeline.of(state.result)
        print(f"the pods index made in {(made - started) * 1000:.0f} ms, the timeline (with its chart) in "
              f"{(time.perf_counter() - made) * 1000:.0f} ms", flush=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(state), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    browser_path = shutil.which("chromium") or shutil.which("chromium-browser")
    for path_ in ("/api/cluster", "/"):
        t0 = time.perf_counter()
        with urllib.request.urlopen(url + path_) as answer:
            size = len(answer.read())
        print(f"GET {path_}: {size / 1024:,.0f} KiB in {(time.perf_counter() - t0) * 1000:.0f} ms", flush=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
        page = browser.new_page()
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            page.goto(url + "/", wait_until="load")
            page.wait_for_function("!document.querySelector('[aria-busy=true]')")
            first = time.perf_counter() - t0
            pools = _pools(page)
            pod = page.locator("a.pod-link").first
            t0 = time.perf_counter()
            pod.click()
            page.wait_for_selector("#node-groups")
            opened = time.perf_counter() - t0
            t0 = time.perf_counter()
            page.reload(wait_until="load")
            again = time.perf_counter() - t0
            t0 = time.perf_counter()
            page.goto(url + "/timeline", wait_until="load")
            timeline = time.perf_counter() - t0
            t0 = time.perf_counter()
            page.goto(url + "/pods?sort=-pending", wait_until="load")
            pods = time.perf_counter() - t0
            print(f"first view {first * 1000:.0f} ms{pools}, a pending pod opened {opened * 1000:.0f} ms "
                  f"(again {again * 1000:.0f} ms), the timeline (chart and first events) {timeline * 1000:.0f} ms, "
                  f"the pods list by pending time {pods * 1000:.0f} ms", flush=True)
        browser.close()
    server.should_exit = True


def _pools(page: Page) -> str:
    """Open the largest pool and page through it, then find a node by name and open it (the pages
    that load a pool's nodes when it is opened; "" for a page that has every node already)."""
    pools = page.locator("details.pool[data-pool]")
    if not pools.count():
        return ""
    largest = max(range(pools.count()), key=lambda i: int(pools.nth(i).get_attribute("data-count") or 0))
    pool = pools.nth(largest)
    name_, count = pool.get_attribute("data-pool"), pool.get_attribute("data-count")
    t0 = time.perf_counter()
    pool.locator("summary").click()
    pool.locator("tr.node-row").first.wait_for()
    opened = time.perf_counter() - t0
    first = pool.locator("tr.node-row").first.get_attribute("data-name")
    t0 = time.perf_counter()
    pool.locator("button.next").click()
    page.wait_for_function("([pool, first]) => document.querySelector(`details.pool[data-pool='${pool}'] tr.node-row`)"
                           ".dataset.name !== first", arg=[name_, first])
    paged = time.perf_counter() - t0
    name = pool.locator("tr.node-row").last.get_attribute("data-name") or ""
    t0 = time.perf_counter()
    page.fill("#node-search", name)
    page.wait_for_selector(f"#search-results tr.node-row[data-name='{name}']")
    found = time.perf_counter() - t0
    t0 = time.perf_counter()
    page.click(f"#search-results a.node-link:text-is('{name}')")
    page.wait_for_selector("#node-pods")
    shown = time.perf_counter() - t0
    return (f", the largest pool ({count} nodes) opened {opened * 1000:.0f} ms, "
            f"its next page {paged * 1000:.0f} ms, a node found by name {found * 1000:.0f} ms and opened "
            f"{shown * 1000:.0f} ms")


if __name__ == "__main__":
    main()
