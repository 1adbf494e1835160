// kubesched ui: table filters, the timeline's scrubber and the what-if form's files. No framework:
// the pages (the what-if's answer too) are rendered on the server; this only reads the JSON API where
// a page changes in place.
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
    document.getElementById("terminating-count").textContent = valueAt(data.terminating, t);
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

// A file chosen for one of the what-if form's texts (--apply, --scheduler-config) is read into its
// text area, where it can be seen and changed before the form is posted as it is.
async function readInto(input) {
  const file = input.files[0];
  if (file) document.getElementById(input.dataset.into).value = await file.text();
}

document.addEventListener("DOMContentLoaded", () => {
  for (const input of document.querySelectorAll("input[data-filter]")) {
    input.addEventListener("input", () => filterRows(input));
  }
  for (const input of document.querySelectorAll("input[type=file][data-into]")) {
    input.addEventListener("change", () => readInto(input));
  }
  timeline();
});
