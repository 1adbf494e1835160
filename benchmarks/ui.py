"""``kubesched ui`` on a big cluster, measured in a real browser (Debian's chromium through Playwright).

Loads a dump (``--dump``: e.g. the 1000-node, 20 000-pod one ``benchmarks/production_dump.py
--generate-only --keep DIR`` writes), simulates it as ``kubesched ui`` does, serves it with uvicorn
and times, from the browser:

* the first view (``/``, navigation start to the load event), after the simulation is ready;
* opening a pending pod from the cluster page (the click to the loaded pod page: its diagnosis is
  worked out on the request);
* moving the timeline's scrubber (the input event to the repainted counts and events).

    python benchmarks/ui.py --dump /tmp/dumps/eks-1000n-20000p-s1.json
"""

from __future__ import annotations

import argparse
import shutil
import socket
import threading
import time

from kubesched.ui.app import create_app
from kubesched.ui.state import UiState


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", required=True, help="a scenario or kubectl dump")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import uvicorn
    from playwright.sync_api import sync_playwright

    started = time.perf_counter()
    state = UiState.load(args.dump)
    print(f"loaded and simulated in {time.perf_counter() - started:.1f} s: {len(state.result['nodes'])} nodes, "
          f"{len(state.result['pods'])} pods", flush=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(state), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    browser_path = shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
        page = browser.new_page()
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            page.goto(url + "/", wait_until="load")
            first = time.perf_counter() - t0
            pod = page.locator("a.pod-link").first
            t0 = time.perf_counter()
            pod.click()
            page.wait_for_selector("#node-groups")
            opened = time.perf_counter() - t0
            page.goto(url + "/timeline")
            page.wait_for_function("document.getElementById('pending-count').textContent !== '-'")
            moved = page.evaluate("""() => {
                const s = document.getElementById('scrubber');
                const t0 = performance.now();
                s.value = String(Number(s.max) / 2);
                s.dispatchEvent(new Event('input'));
                return performance.now() - t0;
            }""")
            print(f"first view {first * 1000:.0f} ms, a pending pod opened {opened * 1000:.0f} ms, "
                  f"scrubber moved {moved:.0f} ms", flush=True)
        browser.close()
    server.should_exit = True


if __name__ == "__main__":
    main()
