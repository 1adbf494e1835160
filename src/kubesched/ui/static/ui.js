// kubesched ui: table filters, the timeline's scrubber and the what-if form. No framework: the
// pages are rendered on the server; this only reads the JSON API where a page changes in place.
"use strict";

function filterRows(input) {
  const cls = input.dataset.filter;
  const wanted = input.value.trim().toLowerCase();
  let shown = 0;
  for (const row of document.querySelectorAll("tr." + cls)) {
    const match = !wanted || row.dataset.name.toLowerCase().includes(wanted);
    row.hidden = !match;
    if (match) shown += 1;
  }
  if (cls === "node-row") {
    for (const pool of document.querySelectorAll("details.pool")) {
      const any = pool.querySelector("tr.node-row:not([hidden])");
      pool.hidden = !any;
      if (wanted && any) pool.open = true;
    }
    const count = document.getElementById("node-count");
    if (count) count.textContent = wanted ? shown + " nodes" : "";
  }
}

function valueAt(series, t) {
  let value = 0;
  for (const [time, count] of series) {
    if (time > t) break;
    value = count;
  }
  return value;
}

async function timeline() {
  const scrubber = document.getElementById("scrubber");
  if (!scrubber) return;
  const data = await (await fetch("/api/timeline")).json();
  const filter = document.getElementById("event-filter");
  const body = document.querySelector("#events tbody");
  const show = () => {
    const t = Number(scrubber.value);
    document.getElementById("time-label").textContent = t.toFixed(1).replace(/\.0$/, "");
    document.getElementById("pending-count").textContent = valueAt(data.pending, t);
    document.getElementById("running-count").textContent = valueAt(data.running, t);
    const wanted = filter.value.trim().toLowerCase();
    const rows = [];
    for (const e of data.events) {
      if (e.time > t) break;
      const text = [e.reason, e.pod, e.node || ""].join(" ").toLowerCase();
      if (wanted && !text.includes(wanted)) continue;
      rows.push(e);
    }
    body.replaceChildren(...rows.slice(-500).map((e) => {
      const tr = document.createElement("tr");
      for (const cell of [e.time, e.reason, e.pod, e.node || "", e.message || ""]) {
        const td = document.createElement("td");
        td.textContent = String(cell);
        tr.appendChild(td);
      }
      return tr;
    }));
    document.getElementById("event-count").textContent =
      rows.length + " events up to t" + (rows.length > 500 ? " (the last 500 shown)" : "");
  };
  scrubber.addEventListener("input", show);
  filter.addEventListener("input", show);
  show();
}

function list(id, items, text) {
  const ul = document.getElementById(id);
  ul.replaceChildren(...items.map((item) => {
    const li = document.createElement("li");
    li.textContent = text(item);
    return li;
  }));
  if (!items.length) {
    const li = document.createElement("li");
    li.textContent = "none";
    li.className = "muted";
    ul.appendChild(li);
  }
}

function whatifForm() {
  const form = document.getElementById("whatif-form");
  if (!form) return;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const names = (key) => (data.get(key) || "").split(",").map((s) => s.trim()).filter(Boolean);
    const preemption = data.get("preemption");
    const body = {
      drain: names("drain"), cordon: names("cordon"), priorityClass: names("priorityClass"),
      ignoreDaemonSets: data.has("ignoreDaemonSets"), force: data.has("force"),
      deleteEmptyDirData: data.has("deleteEmptyDirData"),
      preemption: preemption === "" ? null : preemption === "true",
    };
    const status = document.getElementById("whatif-status");
    const error = document.getElementById("whatif-error");
    const result = document.getElementById("whatif-result");
    status.textContent = "simulating…";
    error.hidden = true;
    const response = await fetch("/api/whatif", {
      method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
    const answer = await response.json();
    status.textContent = "";
    if (!response.ok) {
      error.textContent = typeof answer.detail === "string" ? answer.detail : JSON.stringify(answer.detail);
      error.hidden = false;
      result.hidden = true;
      return;
    }
    const s = answer.summary;
    const rows = ["scheduled", "pending", "preemptions", "victims"].map((k) => [k, s.baseline[k], s.changed[k]]);
    document.querySelector("#whatif-summary tbody").replaceChildren(...rows.map((cells) => {
      const tr = document.createElement("tr");
      for (const cell of cells) {
        const td = document.createElement("td");
        td.textContent = String(cell);
        tr.appendChild(td);
      }
      return tr;
    }));
    document.getElementById("whatif-note").textContent =
      answer.baselinePreemption ? "Baseline: " + answer.baselinePreemption.reason : "";
    list("whatif-preempted", answer.preempted, (p) => `${p.victim} (priority ${p.victimPriority}) by ${p.preemptor} on ${p.node}` +
      (p.violatesPDB ? " — violates a PodDisruptionBudget" : ""));
    list("whatif-started", answer.started, (p) => `${p.pod} on ${p.node}`);
    list("whatif-stopped", answer.stopped, (p) => `${p.pod} (on ${p.node})` +
      (p.replacedBy ? `; replaced by ${p.replacedBy.pod} on ${p.replacedBy.node || "-"}` : ""));
    const changed = answer.impact.filter((r) => r.runningBefore !== r.runningAfter || r.pendingBefore !== r.pendingAfter ||
      r.preemptedBefore !== r.preemptedAfter);
    document.querySelector("#whatif-impact tbody").replaceChildren(...changed.map((r) => {
      const tr = document.createElement("tr");
      for (const cell of [r.namespace, r.priorityClass || "(none)", `${r.runningBefore} → ${r.runningAfter}`,
                          `${r.pendingBefore} → ${r.pendingAfter}`, `${r.preemptedBefore} → ${r.preemptedAfter}`]) {
        const td = document.createElement("td");
        td.textContent = cell;
        tr.appendChild(td);
      }
      return tr;
    }));
    const link = document.getElementById("whatif-json");
    link.href = URL.createObjectURL(new Blob([JSON.stringify(answer, null, 2)], {type: "application/json"}));
    result.hidden = false;
  });
}

document.addEventListener("DOMContentLoaded", () => {
  for (const input of document.querySelectorAll("input[data-filter]")) {
    input.addEventListener("input", () => filterRows(input));
  }
  timeline();
  whatifForm();
});
