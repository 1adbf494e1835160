"""``kubesched ui`` on a big cluster, as a user runs it, measured in a real browser (Debian's chromium
through Playwright).

Starts ``python -m kubesched ui DUMP`` in a process of its own (``--dump``: e.g. the 1000-node,
20 000-pod one ``benchmarks/production_dump.py --generate-only --keep DIR`` writes; or ``--size
NODESxPODS``: a production-shaped dump of that size built by the same code into ``--keep DIR``) and
reports:

* **start**: the process's start to the first page (``GET /`` answered), loading and simulating
  included, with the CPU seconds the server used by then and its resident memory (now and at its
  peak) (on a busy machine the wall clock is
  mostly waiting for a core; the CPU seconds are what the work costs);
* **pages, idle**: each page from navigation start to the load event in Chromium (the cluster page
  until its open pools' nodes are there), with the server's part (request to first byte) and the
  bytes sent (compressed) and read: the cluster page, a pool's nodes (``/nodes``), a node, the pods
  list (and sorted by pending time), a pending pod, a pod gone at the end (if the run has one), the
  timeline, the edit form, the what-if form and ``/config`` (if the server has it); and, on the
  cluster page, opening the largest pool, its next page, a node found by name and that node's page;
* **a what-if** (``POST /api/whatif``, cordoning the node that runs the most pods): its job's time
  from the request to done (the server's own timestamps), the worker's CPU seconds, how many
  progress reports the job showed before it was done, the phases it went through (when each began)
  and the most memory the server and its workers held meanwhile; and **every page again while it runs**
  (rounds of them until it is done: the slowest of each is the figure);
* **an edit** (``POST /api/objects``: a new PriorityClass, which every later page then reads): its
  job's time and CPU seconds, and the cluster page after it.

    python benchmarks/ui.py --dump /tmp/dumps/eks-1000n-20000p-s1.yaml
    python benchmarks/ui.py --size 100x2000 --keep /tmp/dumps --json -
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Page

TICK = os.sysconf("SC_CLK_TCK")
#: seconds a page may take before it is reported as over that
PAGE_TIMEOUT = 120
#: what the navigation timing says of a page: the server's part, the load event, the bytes
NAV = ("() => { const n = performance.getEntriesByType('navigation')[0];"
       " return [n.responseStart - n.requestStart, n.loadEventEnd, n.encodedBodySize, n.decodedBodySize]; }")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """The process's own CPU seconds, and those of the processes it started (the job workers: forked
    by its fork server, whose CPU seconds count theirs once they have ended, or spawned by itself)."""
    def stat(pid_: int) -> list[str]:
        return Path(f"/proc/{pid_}/stat").read_text().rsplit(")", 1)[1].split()

    fields = stat(pid)
    children = (int(fields[13]) + int(fields[14])) / TICK
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                theirs = stat(int(child))
            except OSError:  # ended meanwhile: counted in ours once waited for
                continue
            children += sum(int(theirs[i]) for i in (11, 12, 13, 14)) / TICK
    return (int(fields[11]) + int(fields[12])) / TICK, children


def memory_mib(pid: int) -> dict[str, float]:
    """The server's resident memory now and at its peak (``VmRSS``, ``VmHWM``), and the resident
    memory of the processes it started (its job workers, the fork server), in MiB."""
    def status(pid_: int) -> dict[str, float]:
        found: dict[str, float] = {}
        for line in Path(f"/proc/{pid_}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) / 1024
        return found

    own = status(pid)
    children = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            with contextlib.suppress(OSError):
                children += status(int(child)).get("VmRSS", 0.0)
    return {"rss": own.get("VmRSS", 0.0), "peak": own.get("VmHWM", 0.0), "children": children}


def get(url: str) -> Any:
    with urllib.request.urlopen(url) as answer:
        return json.loads(answer.read())


def post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as answer:
        return json.loads(answer.read())


def start_server(path: str) -> tuple[subprocess.Popen[bytes], str, dict[str, Any]]:
    """``kubesched ui PATH`` on a free port, timed to its first page."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "kubesched", "ui", path, "--port", str(port)],
                              stdout=subprocess.DEVNULL)
    while True:
        if server.poll() is not None:
            raise SystemExit(f"kubesched ui exited with {server.returncode} before its first page")
        try:
            with urllib.request.urlopen(url + "/") as answer:
                answer.read()
            break
        except OSError:
            time.sleep(0.1)
    wall = time.perf_counter() - started
    own, _ = cpu_seconds(server.pid)
    return server, url, {"seconds": wall, "cpuSeconds": own, "memoryMiB": memory_mib(server.pid)}


def pages_of(url: str) -> dict[str, str]:
    """The pages to time, found through the API (a pool, a node, a pending pod, a gone pod)."""
    cluster = get(url + "/api/cluster")
    pools = cluster.get("pools") or []
    largest = max(pools, key=lambda p: p["count"])["pool"] if pools else None
    nodes = get(url + "/api/cluster/nodes?" + urllib.parse.urlencode({"pool": largest or "", "limit": 1}))["nodes"]
    busiest = get(url + "/api/cluster/nodes?sort=pods&limit=1")["nodes"]
    pending = get(url + "/api/pods?phase=Pending&limit=1")["pods"]
    pages = {"cluster": "/", "nodes": "/nodes?" + urllib.parse.urlencode({"pool": largest or ""}),
             "node": f"/nodes/{urllib.parse.quote(nodes[0]['node'])}" if nodes else "",
             "pods": "/pods", "pods by pending": "/pods?sort=-pending",
             "pending pod": f"/pods/{pending[0]['pod']}" if pending else "",
             "timeline": "/timeline", "edit": "/edit", "what-if form": "/whatif", "config": "/config"}
    for offset in range(0, 20_000, 1000):  # a pod gone at the end: its page is the run's record of it
        rows = get(url + f"/api/pods?sort=-pending&limit=1000&offset={offset}")["pods"]
        gone = next((r for r in rows if r["gone"] is not None), None)
        if gone or len(rows) < 1000:
            pages["gone pod"] = f"/pods/{gone['pod']}" if gone else ""
            break
    try:
        urllib.request.urlopen(url + "/config").close()
    except OSError:
        pages["config"] = ""
    pages = {name: path for name, path in pages.items() if path}
    pages["_busiest"] = busiest[0]["node"] if busiest else ""
    return pages


def visit(page: Page, url: str) -> dict[str, float]:
    """One page: navigation to the load event (the cluster page: to its open pools' nodes too)."""
    from playwright.sync_api import TimeoutError as Timeout

    t0 = time.perf_counter()
    try:
        page.goto(url, wait_until="load", timeout=PAGE_TIMEOUT * 1000)
        if url.endswith("/"):
            page.wait_for_function("!document.querySelector('[aria-busy=true]')", timeout=PAGE_TIMEOUT * 1000)
    except Timeout:  # a figure too: the page took longer than that
        return {"ms": PAGE_TIMEOUT * 1000, "serverMs": float("nan"), "sentKiB": 0, "readKiB": 0, "timedOut": True}
    total = time.perf_counter() - t0
    server, _load, sent, read = page.evaluate(NAV)
    return {"ms": total * 1000, "serverMs": server, "sentKiB": sent / 1024, "readKiB": read / 1024}


def round_of(page: Page, url: str, pages: dict[str, str]) -> dict[str, dict[str, float]]:
    return {name: visit(page, url + path) for name, path in pages.items() if not name.startswith("_")}


def wait_job(url: str, job: dict[str, Any], server_pid: int, page: Page | None = None,
             pages: dict[str, str] | None = None) -> dict[str, Any]:
    """Follow a job to its end (timing ``pages`` round after round meanwhile): its time, the CPU
    seconds it cost, the progress reports seen."""
    own0, children0 = cpu_seconds(server_pid)
    reports: list[dict[str, Any]] = []
    rounds: list[dict[str, dict[str, float]]] = []
    memory = memory_mib(server_pid)
    while True:
        seen_memory = memory_mib(server_pid)
        memory = {"rss": max(memory["rss"], seen_memory["rss"]), "peak": seen_memory["peak"],
                  "children": max(memory["children"], seen_memory["children"])}
        now = get(url + f"/api/jobs/{job['id']}")
        if now["state"] in ("done", "failed", "cancelled"):
            break
        if now["progress"].get("now") is not None and now["progress"] not in reports[-1:]:
            reports.append(now["progress"])
        if page is not None and pages:  # a round of pages, the job's progress looked at after each
            done: dict[str, dict[str, float]] = {}
            for name, path in pages.items():
                if not name.startswith("_"):
                    done[name] = visit(page, url + path)
                    seen = get(url + f"/api/jobs/{job['id']}")["progress"]
                    if seen.get("now") is not None and seen not in reports[-1:]:
                        reports.append(seen)
            rounds.append(done)
        else:
            time.sleep(0.25)
    own1, children1 = cpu_seconds(server_pid)
    return {"state": now["state"], "error": now["error"], "seconds": now["finished"] - now["created"],
            "runSeconds": now["finished"] - (now["started"] or now["created"]),
            "serverCpuSeconds": own1 - own0, "workerCpuSeconds": children1 - children0,
            "progressReports": len(reports), "lastFraction": (reports[-1]["fraction"] if reports else None),
            "phases": [(name, round(at - now["created"], 1)) for name, at in now.get("phases", [])],
            "memoryMiB": memory, "rounds": rounds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--dump", help="a scenario or kubectl dump")
    source.add_argument("--size", help="NODESxPODS: build a production-shaped dump of that size (e.g. 1000x20000)")
    parser.add_argument("--keep", help="where --size's dump is written (and found again); default: a temporary folder")
    parser.add_argument("--repeat", type=int, default=2, help="rounds of the pages while idle (default 2)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON here (- for standard output)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    path = args.dump
    if args.size:
        sys.path.insert(0, str(Path(__file__).parent))
        from production_dump import ensure_dumps

        nodes, pods = (int(n) for n in args.size.lower().split("x"))
        folder = Path(args.keep or tempfile.mkdtemp(prefix="kubesched-ui-bench-"))
        folder.mkdir(parents=True, exist_ok=True)
        _, rows = ensure_dumps(folder, nodes, pods, ["json"])
        path = rows[0]["path"]
    figures: dict[str, Any] = {"dump": str(path), "loadAverage": os.getloadavg(), "cpus": os.cpu_count()}
    server, url, figures["start"] = start_server(str(path))
    print(f"first page {figures['start']['seconds']:.1f} s after start ({figures['start']['cpuSeconds']:.1f} CPU s); "
          f"load average {figures['loadAverage'][0]:.1f} on {figures['cpus']} cores; memory "
          f"{_memory(figures['start']['memoryMiB'])}", flush=True)
    try:
        pages = pages_of(url)
        browser_path = shutil.which("chromium") or shutil.which("chromium-browser")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
            page = browser.new_page()
            figures["idle"] = [round_of(page, url, pages) for _ in range(args.repeat)]
            page.goto(url + "/", wait_until="load")
            figures["clusterPage"] = _pools(page)
            _print_pages("idle", figures["idle"])
            print("cluster page:", ", ".join(f"{k} {v:.0f} ms" for k, v in figures["clusterPage"].items()), flush=True)
            job = post(url + "/api/whatif", {"cordon": [pages["_busiest"]]})
            figures["whatif"] = wait_job(url, job, server.pid, page, pages)
            _print_job(f"what-if (cordon {pages['_busiest']})", figures["whatif"])
            _print_pages("while the what-if ran", figures["whatif"]["rounds"])
            edit = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: bench-edit\nvalue: 12345\n"
            job = post(url + "/api/objects", {"yaml": edit})
            figures["edit"] = wait_job(url, job, server.pid)
            _print_job("edit (a PriorityClass added)", figures["edit"])
            figures["afterEdit"] = visit(page, url + "/")
            print(f"cluster page after the edit {figures['afterEdit']['ms']:.0f} ms", flush=True)
            browser.close()
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(30)
    figures["loadAverageAfter"] = os.getloadavg()
    if args.json:
        text = json.dumps(figures, indent=1)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text)


def _print_pages(what: str, rounds: list[dict[str, dict[str, float]]]) -> None:
    print(f"pages {what} ({len(rounds)} rounds; ms to the load event, min-max; server's part; KiB sent/read):", flush=True)
    for name in rounds[0] if rounds else ():
        times = [r[name]["ms"] for r in rounds if name in r]
        server = [r[name]["serverMs"] for r in rounds if name in r]
        last = rounds[-1][name]
        late = sum(1 for r in rounds if r.get(name, {}).get("timedOut"))
        print(f"  {name:16} {min(times):6.0f}-{max(times):6.0f} ms{f' ({late} over {PAGE_TIMEOUT} s)' if late else ''}  (server {min(server):.0f}-{max(server):.0f} ms)"
              f"  {last['sentKiB']:.0f}/{last['readKiB']:.0f} KiB", flush=True)


def _print_job(what: str, job: dict[str, Any]) -> None:
    print(f"{what}: {job['state']}{' (' + job['error'] + ')' if job['error'] else ''} in {job['seconds']:.1f} s "
          f"(running {job['runSeconds']:.1f} s); CPU s: worker {job['workerCpuSeconds']:.1f}, server "
          f"{job['serverCpuSeconds']:.1f}; {job['progressReports']} progress reports seen"
          f"{'' if job['lastFraction'] is None else ', the last at ' + format(job['lastFraction'] or 0, '.0%')}; "
          f"phases {', '.join(f'{name} at {at:g} s' for name, at in job['phases'])}; memory (the most seen) "
          f"{_memory(job['memoryMiB'])}", flush=True)


def _memory(mib: dict[str, float]) -> str:
    return (f"server {mib['rss']:.0f} MiB resident (peak {mib['peak']:.0f}), its workers and fork server "
            f"{mib['children']:.0f} MiB")


def _pools(page: Page) -> dict[str, float]:
    """On the cluster page: open the largest pool and page through it, then find a node by name and
    open it (ms each)."""
    pools = page.locator("details.pool[data-pool]")
    if not pools.count():
        return {}
    largest = max(range(pools.count()), key=lambda i: int(pools.nth(i).get_attribute("data-count") or 0))
    pool = pools.nth(largest)
    name_ = pool.get_attribute("data-pool")
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
    return {"largest pool opened": opened * 1000, "its next page": paged * 1000,
            "a node found by name": found * 1000, "that node opened": shown * 1000}


if __name__ == "__main__":
    main()
