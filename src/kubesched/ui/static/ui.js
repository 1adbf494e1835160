// kubesched ui: table filters, a pool's nodes and the node search, and the what-if form's
// files. No framework: the pages (the what-if's answer too) are rendered on the
// server; this only reads the JSON API where a page changes in place.
"use strict";

function filterRows(input) {
  const wanted = input.value.trim().toLowerCase();
  for (const row of document.querySelectorAll("tr." + input.dataset.filter)) {
    row.hidden = !!wanted && !row.dataset.name.toLowerCase().includes(wanted);
  }
}

// -- the cluster's nodes: a page at a time from /api/cluster/nodes (the page has the pools' sums) --
function cell(tr, ...content) {
  const td = document.createElement("td");
  td.append(...content);
  tr.appendChild(td);
  return td;
}

function share(value, detail) {
  if (value === null) return [Object.assign(document.createElement("span"), {className: "muted", textContent: "-"})];
  const bar = document.createElement("span");
  bar.className = "bar";
  bar.title = (value * 100).toFixed(1) + " %";
  const fill = document.createElement("span");
  fill.style.width = Math.min(value * 100, 100) + "%";
  bar.appendChild(fill);
  const muted = Object.assign(document.createElement("span"), {className: "muted", textContent: detail});
  return [bar, " " + Math.round(value * 100) + "% ", muted];
}

function nodeRow(n, withPool) {
  const tr = document.createElement("tr");
  tr.className = "node-row";
  tr.dataset.name = n.node;
  const link = Object.assign(document.createElement("a"), {className: "node-link", textContent: n.node});
  link.href = "/nodes/" + encodeURIComponent(n.node);
  cell(tr, link);
  if (withPool) cell(tr, n.pool);
  cell(tr, n.zone);
  cell(tr, n.pods + " / " + n.allocatablePods);
  cell(tr, ...share(n.cpuShare, n.shown.cpu));
  cell(tr, ...share(n.memoryShare, n.shown.memory));
  cell(tr, Object.keys(n.extended).map((name) => name + " " + n.shown[name]).join(", "));
  cell(tr, n.taints.join(", "));
  const state = cell(tr, !n.ready ? "NotReady" : n.unschedulable ? "cordoned" : "Ready");
  for (const c of n.conditions) {
    state.append(" ", Object.assign(document.createElement("span"), {className: "error", textContent: c}));
  }
  return tr;
}

// A list of nodes (a pool's, or the search's) that asks the API for one page at a time; only the
// answer to the last request is shown.
class NodeList {
  constructor(element, params) {
    this.element = element;
    this.params = params;
    this.size = Number(element.dataset.page) || 50;
    this.withPool = "withPool" in element.dataset;
    this.offset = 0;
    this.total = 0;
    this.asked = 0;
    element.querySelector("button.prev").addEventListener("click", () => this.load(this.offset - this.size));
    element.querySelector("button.next").addEventListener("click", () => this.load(this.offset + this.size));
  }

  async load(offset = 0) {
    const asked = ++this.asked;
    this.offset = Math.max(0, offset);
    const query = new URLSearchParams({...this.params, offset: this.offset, limit: this.size});
    this.element.setAttribute("aria-busy", "true");
    try {
      const answer = await (await fetch("/api/cluster/nodes?" + query)).json();
      if (asked !== this.asked) return null;
      this.total = answer.total;
      this.element.querySelector("tbody").replaceChildren(...answer.nodes.map((n) => nodeRow(n, this.withPool)));
      const last = this.offset + answer.nodes.length;
      this.element.querySelector(".range").textContent =
        answer.total ? "nodes " + (this.offset + 1) + "–" + last + " of " + answer.total : "no nodes";
      this.element.querySelector("button.prev").disabled = this.offset === 0;
      this.element.querySelector("button.next").disabled = last >= answer.total;
      return answer;
    } finally {
      if (asked === this.asked) this.element.removeAttribute("aria-busy");
    }
  }
}

function pools() {
  for (const details of document.querySelectorAll("details.pool")) {
    const element = details.querySelector(".node-list");
    const list = new NodeList(element, {pool: details.dataset.pool});
    const shown = element.querySelector(".zone-shown");
    const showZone = (zone) => {
      if (zone === null) delete list.params.zone; else list.params.zone = zone;
      shown.hidden = zone === null;
      shown.querySelector("strong").textContent = zone || "(no zone label)";
      details.open = true;
      list.load(0);
    };
    for (const link of details.querySelectorAll("a.zone-link")) {
      link.addEventListener("click", (event) => { event.preventDefault(); showZone(link.dataset.zone); });
    }
    shown.querySelector("a.all-zones").addEventListener("click", (event) => { event.preventDefault(); showZone(null); });
    let loaded = false;
    const opened = () => {
      if (details.open && !loaded) {
        loaded = true;
        list.load(0);
      }
    };
    details.addEventListener("toggle", opened);
    opened();
  }
}

function nodeSearch() {
  const input = document.getElementById("node-search");
  const element = document.getElementById("search-results");
  if (!input || !element) return;
  const list = new NodeList(element, {q: ""});
  const count = document.getElementById("node-count");
  let timer = null;
  const search = async () => {
    const wanted = input.value.trim();
    document.getElementById("pools").hidden = !!wanted;
    element.hidden = !wanted;
    if (!wanted) {
      list.asked += 1;  // an answer still on its way is not shown
      count.textContent = "";
      return;
    }
    list.params.q = wanted;
    const answer = await list.load(0);
    if (answer) count.textContent = answer.total + " node" + (answer.total === 1 ? "" : "s");
  };
  // with JavaScript the results come in place as one types; the form is for pages without it
  document.getElementById("node-search-form").addEventListener("submit", (event) => event.preventDefault());
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(search, 150);
  });
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
  pools();
  nodeSearch();
});
