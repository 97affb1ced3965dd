// barrierflow's web UI: polls the JobMaster's REST API (Flink's shape) every second and draws
// the job graph, the checkpoint tab and the exceptions. No libraries and no external assets:
// the page must work offline. Charts and the graph are inline SVG drawn here.
"use strict";

const POLL_MS = 1000;
const SVG = "http://www.w3.org/2000/svg";
const state = { jobId: null, tab: "overview", sub: "overview", selected: null, job: null, cps: null };

// --- formatting ------------------------------------------------------------------------------

function bytes(n) {
  if (n === null || n === undefined || n < 0) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(n < 10 ? 2 : 1)) + " " + units[i];
}
function ms(n) {
  if (n === null || n === undefined || n < 0) return "–";
  if (n < 1000) return Math.round(n) + " ms";
  if (n < 60000) return (n / 1000).toFixed(n < 10000 ? 2 : 1) + " s";
  const s = Math.round(n / 1000);
  return Math.floor(s / 60) + "m " + (s % 60) + "s";
}
function rate(n) {
  if (n === null || n === undefined) return "–";
  if (n >= 1e6) return (n / 1e6).toFixed(2) + "M";
  if (n >= 1e4) return (n / 1e3).toFixed(1) + "k";
  return n.toFixed(n < 10 ? 1 : 0);
}
function time(t) {
  if (!t || t < 0) return "–";
  return new Date(t).toLocaleTimeString([], { hour12: false });
}
function pct(ratio) { return Math.round((ratio || 0) * 100) + "%"; }

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v; else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}
function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}
function fillRows(tbody, rows) {
  tbody.replaceChildren(...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", {}, c)))));
}

// --- REST ------------------------------------------------------------------------------------

async function get(path) {
  const headers = {};
  const secret = sessionStorage.getItem("barrierflow-secret");
  if (secret) headers.Authorization = "Bearer " + secret;
  const response = await fetch(path, { headers, cache: "no-store" });
  if (response.status === 401 || response.status === 403) {
    document.getElementById("auth").hidden = false;
    throw new Error("the REST server asks for the job's secret");
  }
  if (!response.ok) throw new Error(path + ": HTTP " + response.status);
  return response.json();
}

// --- header and tabs ----------------------------------------------------------------------------

function showTab() {
  const tab = (location.hash || "#overview").slice(1);
  state.tab = ["overview", "checkpoints", "exceptions"].includes(tab) ? tab : "overview";
  for (const a of document.querySelectorAll("#tabs a")) {
    a.classList.toggle("active", a.dataset.tab === state.tab);
  }
  for (const s of document.querySelectorAll("section.tab")) s.hidden = s.id !== "tab-" + state.tab;
}
function showSub(sub) {
  state.sub = sub;
  for (const b of document.querySelectorAll("#subtabs button")) {
    b.classList.toggle("active", b.dataset.sub === sub);
  }
  for (const d of document.querySelectorAll(".sub")) d.hidden = d.id !== "sub-" + sub;
}

function renderHeader(job) {
  document.getElementById("job-name").textContent = job.name;
  const st = document.getElementById("job-state");
  st.textContent = job.state;
  st.className = "state " + job.state;
  document.getElementById("job-id").textContent = job.jid;
  document.getElementById("job-duration").textContent = ms(job.duration);
  const fed = new Set(job.plan.nodes.flatMap((n) => n.inputs.map((i) => i.id)));
  let inRate = 0, outRate = 0;
  for (const v of job.vertices) {
    const isSource = !job.plan.nodes.find((n) => n.id === v.id).inputs.length;
    if (isSource) inRate += v.metrics["read-records-per-second"];
    if (!fed.has(v.id)) outRate += v.metrics["read-records-per-second"];
  }
  document.getElementById("records-in").textContent = rate(inRate);
  document.getElementById("records-out").textContent = rate(outRate);
  document.getElementById("job-restarts").textContent = Math.max(0, (job.attempt || 1) - 1);
  const ha = job["high-availability"];
  document.getElementById("job-leader").hidden = !ha;
  if (ha) {
    document.getElementById("job-leader-epoch").textContent =
      `epoch ${ha["leader-epoch"]} of ${ha["cluster-id"]}, since ${time(ha["leader-since"])}`;
  }
}

// --- overview: the job graph -----------------------------------------------------------------

function renderGraph(job) {
  const graph = document.getElementById("job-graph");
  const nodes = job.plan.nodes;
  const depth = {};
  const depthOf = (id) => {
    if (depth[id] !== undefined) return depth[id];
    const node = nodes.find((n) => n.id === id);
    depth[id] = node.inputs.length ? 1 + Math.max(...node.inputs.map((i) => depthOf(i.id))) : 0;
    return depth[id];
  };
  nodes.forEach((n) => depthOf(n.id));
  const columns = {};
  for (const n of nodes) (columns[depth[n.id]] ||= []).push(n.id);
  const W = 230, H = 84, GAP_X = 90, GAP_Y = 24;
  const rows = Math.max(...Object.values(columns).map((c) => c.length));
  const width = Object.keys(columns).length * (W + GAP_X) + 20;
  const height = Math.max(200, rows * (H + GAP_Y) + 20);
  graph.setAttribute("viewBox", `0 0 ${width} ${height}`);
  graph.style.height = Math.min(height, 480) + "px";
  const pos = {};
  for (const [d, ids] of Object.entries(columns)) {
    const top = (height - ids.length * (H + GAP_Y) + GAP_Y) / 2;
    ids.forEach((id, i) => { pos[id] = { x: 20 + d * (W + GAP_X), y: top + i * (H + GAP_Y) }; });
  }
  const defs = svg("defs");
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
    markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#98a2b3" }));
  defs.append(marker);
  const parts = [defs];
  for (const n of nodes) {
    for (const input of n.inputs) {
      const a = pos[input.id], b = pos[n.id];
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2, mx = (x1 + x2) / 2;
      parts.push(svg("path", { class: "edge", d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}` }));
      parts.push(svg("text", { class: "edge-label", x: mx, y: (y1 + y2) / 2 - 6,
        "text-anchor": "middle" }, input.ship_strategy));
    }
  }
  for (const v of job.vertices) {
    const p = pos[v.id], m = v.metrics, level = m["backpressure-level"];
    const g = svg("g", { class: "vertex " + level, transform: `translate(${p.x},${p.y})`,
      "data-vertex": v.id });
    g.append(svg("rect", { width: W, height: H }));
    g.append(svg("rect", { class: "band", width: 6, height: H }));
    const name = v.name.length > 30 ? v.name.slice(0, 29) + "…" : v.name;
    g.append(svg("text", { class: "vertex-name", x: 14, y: 20 }, name));
    g.append(svg("title", {}, v.name));
    g.append(svg("text", { x: 14, y: 38 }, `parallelism ${v.parallelism} · ${v.status}`));
    g.append(svg("text", { x: 14, y: 55 },
      `in ${rate(m["read-records-per-second"])}/s · out ${rate(m["write-records-per-second"])}/s`));
    g.append(svg("text", { class: "vertex-bp", x: 14, y: 72 },
      `back pressure ${pct(m["backpressure-ratio"])} (${level.toUpperCase()}) · busy ${pct(m["busy-ratio"])}`));
    parts.push(g);
  }
  graph.replaceChildren(...parts);
}

function renderVertices(job) {
  fillRows(document.querySelector("#vertex-table tbody"), job.vertices.map((v) => {
    const m = v.metrics;
    return [v.name, v.parallelism, v.status, m["read-records"], m["write-records"],
      rate(m["read-records-per-second"]), rate(m["write-records-per-second"]), pct(m["busy-ratio"]),
      `${pct(m["backpressure-ratio"])} ${m["backpressure-level"].toUpperCase()}`];
  }));
}

// --- checkpoints -----------------------------------------------------------------------------

function renderCounts(cps) {
  const c = cps.counts;
  document.getElementById("count-total").textContent = c.total;
  document.getElementById("count-in-progress").textContent = c.in_progress;
  document.getElementById("count-completed").textContent = c.completed;
  document.getElementById("count-failed").textContent = c.failed;
  document.getElementById("count-restored").textContent = c.restored;
  const latest = cps.latest;
  const line = (label, cp) => cp
    ? [label, `#${cp.id}`, time(cp.trigger_timestamp), ms(cp.end_to_end_duration),
      bytes(cp.checkpointed_size), cp.external_path || cp.failure_message || ""]
    : [label, "none", "", "", "", ""];
  const restored = latest.restored
    ? ["Restored", `#${latest.restored.id}`, time(latest.restored.restore_timestamp), "", "",
      latest.restored.external_path || (latest.restored.is_savepoint ? "savepoint" : "")]
    : ["Restored", "none", "", "", "", ""];
  fillRows(document.querySelector("#latest-table tbody"), [
    line("Completed checkpoint", latest.completed), line("Savepoint", latest.savepoint),
    line("Failed checkpoint", latest.failed), restored]);
}

function chart(id, series, format) {
  // series: [{values: [[x, y], ...], class}], drawn over checkpoint ids
  const node = document.getElementById(id);
  const W = 600, H = 200, L = 64, R = 12, T = 12, B = 28;
  node.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const points = series.flatMap((s) => s.values);
  const parts = [svg("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }),
    svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B })];
  if (!points.length) {
    parts.push(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "no completed checkpoint yet"));
    node.replaceChildren(...parts);
    return;
  }
  const xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs), y1 = Math.max(...ys) * 1.1 || 1;
  const sx = (x) => L + (x1 === x0 ? (W - L - R) / 2 : ((x - x0) / (x1 - x0)) * (W - L - R));
  const sy = (y) => H - B - (y / y1) * (H - T - B);
  for (const f of [0, 0.5, 1]) {
    parts.push(svg("text", { x: L - 6, y: sy(y1 * f) + 3, "text-anchor": "end" }, format(y1 * f)));
    parts.push(svg("line", { class: "axis", x1: L, y1: sy(y1 * f), x2: W - R, y2: sy(y1 * f),
      "stroke-dasharray": "2 4" }));
  }
  parts.push(svg("text", { x: L, y: H - 8 }, "#" + x0));
  parts.push(svg("text", { x: W - R, y: H - 8, "text-anchor": "end" }, "#" + x1));
  parts.push(svg("text", { x: (L + W) / 2, y: H - 8, "text-anchor": "middle" }, "checkpoint id"));
  for (const s of series) {
    if (!s.values.length) continue;
    parts.push(svg("polyline", { class: "line " + (s.class || ""),
      points: s.values.map(([x, y]) => `${sx(x)},${sy(y)}`).join(" ") }));
    if (!s.class) {
      for (const [x, y] of s.values) parts.push(svg("circle", { class: "dot", cx: sx(x), cy: sy(y), r: 3 }));
    }
  }
  node.replaceChildren(...parts);
}

function renderCharts(cps) {
  const done = cps.history.filter((h) => h.status === "COMPLETED").reverse();
  chart("chart-duration", [{ values: done.map((h) => [h.id, h.end_to_end_duration]) }], ms);
  chart("chart-size", [
    { values: done.map((h) => [h.id, h.checkpointed_size]) },
    { values: done.map((h) => [h.id, h.state_size]), class: "second" }], bytes);
}

function renderHistory(cps) {
  const tbody = document.querySelector("#history-table tbody");
  tbody.replaceChildren(...cps.history.map((h) => {
    const row = el("tr", { "data-checkpoint": h.id },
      el("td", {}, h.id), el("td", { class: "status-" + h.status }, h.status),
      el("td", {}, h.checkpoint_type), el("td", {}, `${h.num_acknowledged_subtasks}/${h.num_subtasks}`),
      el("td", {}, time(h.trigger_timestamp)), el("td", {}, time(h.latest_ack_timestamp)),
      el("td", {}, ms(h.end_to_end_duration)), el("td", {}, bytes(h.checkpointed_size)),
      el("td", {}, bytes(h.state_size)), el("td", {}, bytes(h.processed_data)),
      el("td", {}, bytes(h.persisted_data)));
    if (h.id === state.selected) row.classList.add("selected");
    row.addEventListener("click", () => selectCheckpoint(h.id));
    return row;
  }));
}

async function selectCheckpoint(id) {
  state.selected = id;
  for (const r of document.querySelectorAll("#history-table tbody tr")) {
    r.classList.toggle("selected", Number(r.dataset.checkpoint) === id);
  }
  const box = document.getElementById("checkpoint-details");
  const details = await get(`/jobs/${state.jobId}/checkpoints/details/${id}`);
  const sections = [el("h3", {}, `Checkpoint #${id}: ${details.status}` +
    (details.failure_message ? ` (${details.failure_message})` : ""))];
  for (const vertexId of Object.keys(details.tasks || {})) {
    const sub = await get(`/jobs/${state.jobId}/checkpoints/details/${id}/subtasks/${vertexId}`);
    const vertex = (state.job.vertices.find((v) => v.id === vertexId) || { name: vertexId }).name;
    const table = el("table", { class: "grid subtask-details", "data-vertex": vertexId });
    table.append(el("thead", {}, el("tr", {}, ...["Subtask", "Acknowledged", "End to end",
      "Checkpointed size", "Full size", "Start delay", "Alignment", "Sync", "Async",
      "Processed", "Persisted", "Unaligned"].map((t) => el("th", {}, t)))));
    const tbody = el("tbody");
    fillRows(tbody, sub.subtasks.map((s) => s.status !== "completed"
      ? [s.index, "pending or failed", "", "", "", "", "", "", "", "", "", ""]
      : [s.index, time(s.ack_timestamp), ms(s.end_to_end_duration), bytes(s.checkpointed_size),
        bytes(s.state_size), ms(s.start_delay), ms(s.alignment.duration), ms(s.checkpoint.sync),
        ms(s.checkpoint.async), bytes(s.alignment.processed), bytes(s.alignment.persisted),
        s.unaligned_checkpoint ? "yes" : "no"]));
    table.append(tbody);
    sections.push(el("h3", {}, `${vertex} (${sub.num_acknowledged_subtasks}/${sub.num_subtasks})`), table);
  }
  if (sections.length === 1) sections.push(el("p", { class: "muted" }, "No subtask acknowledged it."));
  box.replaceChildren(...sections);
}

function renderSummary(cps) {
  const s = cps.summary;
  const row = (label, stats, f) => [label, f(stats.min), f(stats.avg), f(stats.max)];
  fillRows(document.querySelector("#summary-table tbody"), [
    row("End to end duration", s.end_to_end_duration, ms),
    row("Checkpointed data size", s.checkpointed_size, bytes),
    row("Full checkpoint data size", s.state_size, bytes),
    row("Processed (persisted) in-flight data", s.processed_data, bytes),
    row("Persisted in-flight data", s.persisted_data, bytes)]);
}

function renderConfig(config) {
  const rows = [
    ["Checkpointing mode", config.mode === "exactly_once" ? "Exactly once" : "At least once"],
    ["Interval", config.interval >= 0x7fffffffffff ? "periodic checkpoints off" : ms(config.interval)],
    ["Timeout", ms(config.timeout)], ["Minimum pause between checkpoints", ms(config.min_pause)],
    ["Maximum concurrent checkpoints", config.max_concurrent],
    ["Unaligned checkpoints", config.unaligned_checkpoints ? "enabled" : "disabled"],
    ["Aligned checkpoint timeout", ms(config.aligned_checkpoint_timeout)],
    ["Tolerable failed checkpoints", config.tolerable_failed_checkpoints],
    ["State backend", config.state_backend + (config.incremental ? " (incremental)" : "")],
    ["Checkpoint storage", config.checkpoint_storage],
    ["Checkpoint directory", config.checkpoint_directory || "–"],
    ["Savepoint directory", config.savepoint_directory || "–"],
    ["Retained checkpoints", config.num_retained],
    ["Persist checkpoints externally", config.externalization.enabled
      ? (config.externalization.delete_on_cancellation ? "deleted on cancellation" : "retained on cancellation")
      : "disabled"],
    ["Checkpoints after tasks finish", config.checkpoints_after_tasks_finish ? "enabled" : "disabled"],
  ];
  fillRows(document.querySelector("#config-table tbody"), rows);
}

function renderExceptions(ex) {
  const list = document.getElementById("exceptions-list");
  const entries = ex.exceptionHistory.entries;
  if (!entries.length) {
    list.replaceChildren(el("p", { class: "muted" }, "No exceptions: no attempt of this job failed."));
    return;
  }
  list.replaceChildren(...entries.map((e) => el("div", { class: "exception" },
    el("b", {}, `${time(e.timestamp)} · attempt ${e.attempt}: `), e.message,
    el("pre", {}, e.stacktrace))));
}

// --- rescaling -----------------------------------------------------------------------------------

function renderRescales(history) {
  const change = (r) => Object.entries(r.to_parallelism)
    .filter(([name, p]) => r.from_parallelism[name] !== p)
    .map(([name, p]) => `${name}: ${r.from_parallelism[name]} → ${p}`).join("; ") || "–";
  fillRows(document.querySelector("#rescale-table tbody"), history.rescales.map((r) => [
    time(r.requested_ms), r.trigger, change(r),
    r.decisions > 1 ? `${r.status} (${r.decisions} decisions, the latest's reason)` : r.status,
    r.downtime_ms == null ? "–" : ms(r.downtime_ms), r.detail || r.reason]));
}

async function rescale(event) {
  event.preventDefault();
  const parallelism = parseInt(document.getElementById("rescale-parallelism").value, 10);
  const status = document.getElementById("rescale-status");
  if (!(parallelism >= 1)) { status.textContent = "a parallelism of 1 or more"; return; }
  const body = {};
  for (const v of state.job.vertices) {
    body[v.id] = { parallelism: { lowerBound: 1, upperBound: parallelism } };
  }
  const headers = { "Content-Type": "application/json" };
  const secret = sessionStorage.getItem("barrierflow-secret");
  if (secret) headers.Authorization = "Bearer " + secret;
  const response = await fetch(`/jobs/${state.jobId}/resource-requirements`,
    { method: "PUT", headers, body: JSON.stringify(body) });
  if (response.status === 401 || response.status === 403) {
    document.getElementById("auth").hidden = false;
    status.textContent = "rescaling needs the job's secret";
    return;
  }
  const answer = await response.json();
  status.textContent = response.ok ? `rescale ${answer["rescale-id"]} asked for`
    : (answer.errors || ["refused"]).join("; ");
  poll();
}

// --- polling -----------------------------------------------------------------------------------

let configShown = false;
async function poll() {
  try {
    if (!state.jobId) state.jobId = (await get("/jobs/overview")).jobs[0].jid;
    const [job, cps] = await Promise.all([
      get(`/jobs/${state.jobId}`), get(`/jobs/${state.jobId}/checkpoints`)]);
    state.job = job; state.cps = cps;
    renderHeader(job);
    renderGraph(job);
    renderVertices(job);
    renderCounts(cps);
    renderCharts(cps);
    renderHistory(cps);
    renderSummary(cps);
    if (!configShown) {
      renderConfig(await get(`/jobs/${state.jobId}/checkpoints/config`));
      configShown = true;
    }
    if (state.tab === "exceptions") renderExceptions(await get(`/jobs/${state.jobId}/exceptions`));
    if (state.tab === "overview") renderRescales(await get(`/jobs/${state.jobId}/rescales`));
    document.getElementById("error").hidden = true;
    document.getElementById("updated").textContent = time(Date.now());
    document.body.dataset.loaded = "true";
  } catch (e) {
    const box = document.getElementById("error");
    box.textContent = "Cannot reach the job: " + e.message + " (the job may have ended).";
    box.hidden = false;
  }
}

window.addEventListener("hashchange", () => { showTab(); poll(); });
for (const b of document.querySelectorAll("#subtabs button")) {
  b.addEventListener("click", () => showSub(b.dataset.sub));
}
document.getElementById("rescale-form").addEventListener("submit", rescale);
document.getElementById("secret-save").addEventListener("click", () => {
  sessionStorage.setItem("barrierflow-secret", document.getElementById("secret").value);
  document.getElementById("auth").hidden = true;
  poll();
});
showTab();
showSub("overview");
poll();
setInterval(poll, POLL_MS);
