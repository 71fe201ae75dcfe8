// Gatehouse live view: the flow of the yuno's services, its numbers and their last 15 minutes.
// Hand-written, no library, no build step. Data: api/view (the flow and the latest numbers), api/history (the
// sampler's rings), api/events (SSE: one view a second); ?poll=1 polls api/view once a second instead of SSE.
"use strict";

const state = { view: null, hist: { times: [], series: {} }, capacity: 900, frames: 0, selected: null, listeners: {} };
const $ = (sel) => document.querySelector(sel);

// --- Formatting ---

function esc(s) {
  return String(s == null ? "" : s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
function num(x) {
  if (x == null || Number.isNaN(x)) return "\u2013";
  const a = Math.abs(x);
  if (a >= 100) return Math.round(x).toLocaleString("en-US");
  if (a >= 10) return x.toFixed(0);
  return x.toFixed(1).replace(/\.0$/, "");
}
function bytes(x) {
  if (x == null || x < 0) return "\u2013";
  if (x >= 1 << 30) return (x / (1 << 30)).toFixed(2) + " GiB";
  return (x / (1 << 20)).toFixed(x >= 100 << 20 ? 0 : 1) + " MiB";
}
function age(ms) {
  if (ms == null) return "\u2013";
  if (ms < 1000) return ms + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
  if (ms < 3600000) return (ms / 60000).toFixed(1) + " min";
  return (ms / 3600000).toFixed(1) + " h";
}
function attrValue(x) {
  return x == null || Number.isNaN(x) ? "" : String(x);
}

// --- History ---

function pushFrame(view) {
  const h = state.hist;
  const values = view.values || {};
  h.times.push(view.t);
  for (const id of Object.keys(h.series)) h.series[id].push(id in values ? values[id] : null);
  for (const id of Object.keys(values)) {
    if (!(id in h.series)) {
      const arr = new Array(h.times.length - 1).fill(null);
      arr.push(values[id]);
      h.series[id] = arr;
    }
  }
  while (h.times.length > state.capacity) {
    h.times.shift();
    for (const id of Object.keys(h.series)) h.series[id].shift();
  }
}

// A sparkline: the samples kept (up to the ring: 15 minutes), 0 at the bottom, their maximum at the top; gaps where
// there was no sample. Until a minute has been kept it fills from the right, then it spans the whole width.
function spark(id, w, h, cls, label = true) {
  const v = state.hist.series[id] || [];
  let max = 0;
  for (const x of v) if (x != null && x > max) max = x;
  if (max <= 0) max = 1;
  let line = "", area = "", open = false;
  const step = w / (Math.max(v.length, 60) - 1);
  const x0 = w - (v.length - 1) * step;
  v.forEach((x, i) => {
    const px = (x0 + i * step).toFixed(1);
    if (x == null) {
      if (open) area += `L${(x0 + (i - 1) * step).toFixed(1)},${h}Z`;
      open = false;
      return;
    }
    const py = (h - 1 - (x / max) * (h - 2)).toFixed(1);
    if (!open) {
      line += `M${px},${py}`;
      area += `M${px},${h}L${px},${py}`;
    } else {
      line += `L${px},${py}`;
      area += `L${px},${py}`;
    }
    open = true;
  });
  if (open) area += `L${(x0 + (v.length - 1) * step).toFixed(1)},${h}Z`;
  const top = label && v.some((x) => x != null && x > 0) ? `<span class="max" title="the highest in the sparkline">${num(max)}</span>` : "";
  return `<svg class="spark ${cls || ""}" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" data-series="${esc(id)}">` +
    `<title>${esc(id)}: max ${num(max)}</title><path class="a" d="${area}"/><path class="l" d="${line}"/></svg>${top}`;
}

// --- Rendering ---

function stateLine(s) {
  const dot = s.waiting ? "wait" : s.running ? "on" : "off";
  const flags = s.waiting ? "waiting for its gclass" : (s.running ? "running" : "stopped") + (s.playing ? " \u00b7 playing" : "");
  return `<div class="st"><span class="dot ${dot}"></span>${esc(s.state || "")} \u00b7 ${flags}</div>`;
}

function serviceBox(s, role) {
  if (!s) return "";
  const rx = s.rx, tx = s.tx;
  let nums = "";
  if (s.series && s.series.rx) {
    nums += `<span><span class="k">rx</span> <b>${num(rx)}</b>/s</span><span><span class="k">tx</span> <b>${num(tx)}</b>/s</span>`;
  }
  if (role === "input" || (s.links_total > 0 && role !== "output")) {
    nums += `<span><span class="k">connections</span> <b>${num(s.connections)}</b></span>`;
  }
  let extra = "";
  if (s.listen && s.listen.length) extra += `<div class="st">listen ${s.listen.map(esc).join(", ")}</div>`;
  if (role === "input") {
    const up = (s.links || []).filter((l) => l.up);
    if (up.length) {
      extra += `<ul class="peers">` + up.slice(0, 6).map((l) =>
        `<li data-link="${esc(l.path)}" data-up="true" data-peer="${esc(l.peer)}"><span class="dot on"></span>${esc(l.peer)}</li>`).join("") +
        (up.length > 6 ? `<li>and ${up.length - 6} more</li>` : "") + `</ul>`;
    }
  } else if (role !== "output" && s.links && s.links.length && !(s.queues && s.queues.length)) {
    extra += `<ul class="peers">` + s.links.slice(0, 6).map((l) =>
      `<li data-link="${esc(l.path)}" data-up="${l.up}" data-peer="${esc(l.peer)}"><span class="dot ${l.up ? "on" : "off"}"></span>${esc(l.peer || l.path)}</li>`).join("") + `</ul>`;
  }
  let sparks = "";
  if (s.series && s.series.rx) sparks += `<div class="spark-row">rx ${spark(s.series.rx, 150, 22)}</div>`;
  if (role === "input" && s.series && s.series.conns) sparks += `<div class="spark-row">conn ${spark(s.series.conns, 150, 16)}</div>`;
  if (s.series && s.series.tx && role !== "input" && (role !== "consumer" || s.output || s.tx_total > 0)) sparks += `<div class="spark-row">tx ${spark(s.series.tx, 150, 22)}</div>`;
  return `<div class="box svc${state.selected === s.name + "|" ? " selected" : ""}" data-role="${role}" data-service="${esc(s.name)}" data-gobj=""` +
    ` data-gclass="${esc(s.gclass)}" data-state="${esc(s.state)}" data-running="${!!s.running}" data-playing="${!!s.playing}"` +
    ` data-waiting="${!!s.waiting}" data-rx="${attrValue(rx)}" data-tx="${attrValue(tx)}" data-connections="${attrValue(s.connections)}">` +
    `<div class="t"><b title="${esc(s.description || "")}">${esc(s.name)}</b><span class="gc">${esc(s.gclass)}</span></div>` +
    stateLine(s) + `<div class="nums">${nums}</div>${extra}${sparks}</div>`;
}

function missingBox(name, role) {
  return `<div class="box missing" data-role="${role}" data-service="${esc(name)}" data-missing="true">` +
    `<div class="t"><b>${esc(name)}</b><span class="gc">not in the yuno</span></div></div>`;
}

function queueBox(svc, q) {
  const per = q.retries_per_s;
  return `<div class="box queue" data-service="${esc(svc)}" data-gobj="${esc(q.path)}" data-queue="${esc(q.path)}"` +
    ` data-msgs-in-queue="${attrValue(q.msgs_in_queue)}" data-pending-acks="${attrValue(q.pending_acks)}"` +
    ` data-oldest-pending-age-ms="${attrValue(q.oldest_pending_age_ms)}" data-retries="${attrValue(q.retries)}">` +
    `<div class="t"><b>${esc(q.name)}</b><span class="gc">${esc(q.gclass)}</span></div>` +
    `<div class="st"><span class="dot ${q.running ? "on" : "off"}"></span>${esc(q.state)} \u00b7 queue</div>` +
    `<div class="nums"><span><span class="k">in queue</span> <b class="big">${num(q.msgs_in_queue)}</b></span>` +
    `<span><span class="k">pending acks</span> <b>${num(q.pending_acks)}</b></span>` +
    `<span><span class="k">oldest</span> <b>${age(q.oldest_pending_age_ms)}</b></span>` +
    `<span><span class="k">retries</span> <b>${num(q.retries)}</b>${per != null ? ` (${num(per)}/s)` : ""}</span></div>` +
    (q.series && q.series.msgs_in_queue ? `<div class="spark-row">depth ${spark(q.series.msgs_in_queue, 150, 22, "q")}</div>` : "") +
    (q.series && q.series.pending_acks ? `<div class="spark-row">acks ${spark(q.series.pending_acks, 150, 14, "q")}</div>` : "") +
    `</div>`;
}

// host:port of an address ("tcp://127.0.0.1:2001" -> "127.0.0.1:2001"), to match a destination to a local listener.
function hostPort(a) {
  return String(a || "").replace(/^[a-z0-9+.-]+:\/\//i, "").replace(/\/.*$/, "");
}

function destBox(svc, l) {
  const local = state.listeners[hostPort(l.peer)];
  return `<div class="box dest" data-service="${esc(svc)}" data-gobj="${esc(l.path)}" data-link="${esc(l.path)}"` +
    ` data-up="${l.up}" data-peer="${esc(l.peer)}" data-gclass="${esc(l.gclass)}">` +
    `<div class="t"><b>${esc(l.peer || "(no address)")}</b><span class="gc">${esc(l.gclass)}</span></div>` +
    `<div class="st"><span class="dot ${l.up ? "on" : "off"}"></span>${l.up ? "link up" : "link down"} \u00b7 ${esc(l.state)}</div>` +
    (local ? `<div class="st">\u2192 ${esc(local)} (this yuno)</div>` : "") + `</div>`;
}

function col(head, html) {
  return `<div class="col"><div class="head">${head}</div>${html}</div>`;
}

// One pipeline: input gates -> consumer -> output -> queues -> destinations. Wires are drawn after layout.
function rowHtml(row, byName, ri) {
  const c = byName[row.consumer];
  let out = "", queues = "", dests = "";
  const wires = [];
  row.inputs.forEach((n) => wires.push([`in:${n}`, `c:${row.consumer}`, "flow"]));
  if (row.output) {
    const o = byName[row.output];
    out = o ? serviceBox(o, "output") : missingBox(row.output, "output");
    wires.push([`c:${row.consumer}`, `o:${row.output}`, "flow"]);
    if (o) {
      (o.queues || []).forEach((q, qi) => {
        queues += queueBox(o.name, q).replace("<div ", `<div data-w="q:${qi}" `);
        wires.push([`o:${row.output}`, `q:${qi}`, "flow"]);
        (q.links || []).forEach((l, li) => {
          dests += destBox(o.name, l).replace("<div ", `<div data-w="d:${qi}:${li}" `);
          wires.push([`q:${qi}`, `d:${qi}:${li}`, l.up ? "up" : "down"]);
        });
      });
      if (!(o.queues || []).length) {
        (o.links || []).forEach((l, li) => {
          dests += destBox(o.name, l).replace("<div ", `<div data-w="d:x:${li}" `);
          wires.push([`o:${row.output}`, `d:x:${li}`, l.up ? "up" : "down"]);
        });
      }
    }
  }
  const tag = (html, key) => html.replace("<div ", `<div data-w="${esc(key)}" `);
  const insTagged = row.inputs.map((n) => tag(byName[n] ? serviceBox(byName[n], "input") : missingBox(n, "input"), `in:${n}`)).join("");
  const title = row.output ? `${esc(row.consumer)}: ${row.inputs.map(esc).join(", ")} \u2192 ${esc(row.output)}`
    : `${esc(row.consumer)}: consumes ${row.inputs.map(esc).join(", ")}`;
  const html = `<div class="row" data-row="${ri}" data-consumer="${esc(row.consumer)}"><h2>${title}</h2>` +
    col("inputs", insTagged) +
    col(c ? c.gclass === "C_SINK" ? "consumer" : "relay" : "consumer", c ? tag(serviceBox(c, "consumer"), `c:${row.consumer}`) : missingBox(row.consumer, "consumer")) +
    col(row.output ? "output" : "", row.output ? tag(out, `o:${row.output}`) : "") +
    col(queues ? "queues" : "", queues) +
    col(dests ? "destinations" : "", dests) + `<svg class="wires"></svg></div>`;
  return { html, wires };
}

function drawWires(rowEl, wires) {
  const svg = rowEl.querySelector("svg.wires");
  const base = rowEl.getBoundingClientRect();
  const find = (k) => rowEl.querySelector(`[data-w="${CSS.escape(k)}"]`);
  let paths = "";
  for (const [a, b, cls] of wires) {
    const ea = find(a), eb = find(b);
    if (!ea || !eb) continue;
    const ra = ea.getBoundingClientRect(), rb = eb.getBoundingClientRect();
    const x1 = ra.right - base.left, y1 = ra.top + ra.height / 2 - base.top;
    const x2 = rb.left - base.left, y2 = rb.top + rb.height / 2 - base.top;
    const mx = (x1 + x2) / 2;
    const link = cls === "flow" ? "" : ` link ${cls}" data-up="${cls === "up"}`;
    paths += `<path class="${cls}${link}" data-from="${esc(a)}" data-to="${esc(b)}" d="M${x1.toFixed(1)},${y1.toFixed(1)} C${mx.toFixed(1)},${y1.toFixed(1)} ${mx.toFixed(1)},${y2.toFixed(1)} ${x2.toFixed(1)},${y2.toFixed(1)}"/>`;
  }
  svg.innerHTML = paths;
}

function render(view) {
  state.view = view;
  $("#yuno").textContent = `${view.yuno}${view.role && view.role !== view.yuno ? " (" + view.role + ")" : ""}`;
  const p = view.process || {};
  const ps = p.series || {};
  $("#proc").innerHTML =
    `<div class="metric" data-proc="heap" data-value="${attrValue(p.heap_used)}"><span class="k">heap</span> <b>${bytes(p.heap_used)}</b> / ${bytes(p.heap_max)} ${spark(ps.heap, 90, 18, "", false)}</div>` +
    `<div class="metric" data-proc="rss" data-value="${attrValue(p.rss)}"><span class="k">RSS</span> <b>${bytes(p.rss)}</b> ${spark(ps.rss, 90, 18, "", false)}</div>` +
    `<div class="metric" data-proc="busy" data-value="${attrValue(p.busy_pct)}"><span class="k">core loop busy</span> <b>${p.busy_pct == null ? "\u2013" : num(p.busy_pct) + " %"}</b> ${spark(ps.busy, 90, 18, "", false)}</div>`;
  const byName = {};
  state.listeners = {};
  for (const s of view.services || []) {
    byName[s.name] = s;
    for (const u of s.listen || []) state.listeners[hostPort(u)] = s.name;
  }
  const rows = (view.pipelines && view.pipelines.rows) || [];
  const built = rows.map((r, i) => rowHtml(r, byName, i));
  const others = ((view.pipelines && view.pipelines.others) || []).filter((n) => byName[n]);
  let html = built.map((b) => b.html).join("");
  if (others.length) {
    html += `<div class="row others" data-row="others"><h2>other services</h2>` +
      `<div class="col others-col">${others.map((n) => serviceBox(byName[n], "other")).join("")}</div></div>`;
  }
  if (!html) html = `<p class="muted">No services.</p>`;
  const flow = $("#flow");
  flow.innerHTML = html;
  flow.querySelectorAll(".row[data-row]").forEach((el) => {
    const i = el.getAttribute("data-row");
    if (i !== "others") drawWires(el, built[Number(i)].wires);
  });
  state.frames++;
  document.body.dataset.frames = String(state.frames);
  document.body.dataset.t = String(view.t);
}

// --- Drill-down ---

async function openDetail(service, gobj) {
  state.selected = service + "|" + (gobj || "");
  const panel = $("#detail");
  panel.hidden = false;
  panel.innerHTML = `<p class="muted">Loading ${esc(service)}&hellip;</p>`;
  const r = await fetch(`api/gobj?service=${encodeURIComponent(service)}&gobj=${encodeURIComponent(gobj || "")}`);
  if (!r.ok) {
    panel.innerHTML = `<button class="close" title="close">&times;</button><p>${esc(service)}: ${r.status}</p>`;
    return;
  }
  const d = await r.json();
  const writable = state.view && state.view.writable;
  let h = `<button class="close" title="close">&times;</button><h3>${esc(d.name || d.service)} <span class="muted">${esc(d.gclass)}</span></h3>` +
    `<div class="muted">${esc(d.description)}</div>` +
    `<div class="st"><span class="dot ${d.running ? "on" : "off"}"></span>${esc(d.state)} \u00b7 ${d.running ? "running" : "stopped"}${d.playing ? " \u00b7 playing" : ""}${d.disabled ? " \u00b7 disabled" : ""}` +
    `${d.gobj ? " \u00b7 " + esc(d.service) + " / " + esc(d.gobj.replace(/`/g, " / ")) : ""}</div>`;
  h += `<h4>commands</h4><div class="cmd"><button data-run="stats-yuno" title="stats-yuno: a person's stats read (it moves the rate windows like ./gatehouse cmd does)">stats</button>` +
    `<button data-run="read-attrs">read-attrs</button><button data-run="view-gobj-tree">view-gobj-tree</button></div>`;
  for (const c of d.commands || []) {
    const params = c.params.map((p) => `<label title="${esc(p.description)}">${esc(p.name)} <input data-param="${esc(p.name)}" placeholder="${esc(p.default == null ? "" : p.default)}"></label>`).join("");
    const dis = !c.read_only && !writable ? " disabled" : "";
    h += `<div class="cmd ${c.read_only ? "read" : "write"}" data-command="${esc(c.name)}"><button data-run="${esc(c.name)}"${dis} title="${esc(c.description)}">${esc(c.name)}</button>${params}</div>`;
  }
  if ((d.commands || []).some((c) => !c.read_only)) {
    h += writable
      ? `<div class="cmd"><label>control token <input id="token" type="password" value="${esc(sessionStorage.getItem("gatehouse.token") || "")}"></label></div>`
      : `<div class="muted">Commands that write are off: this container has no control token (gatehouse.control.token).</div>`;
  }
  h += `<pre id="out" hidden></pre>`;
  h += `<h4>attributes</h4><table>` + (d.attrs || []).map((a) =>
    `<tr><td title="${esc(a.description)}">${esc(a.name)}<div class="flags">${esc(a.type)}${a.stats ? " \u00b7 stats" : ""}${a.writable ? " \u00b7 writable" : ""}</div></td>` +
    `<td class="v">${esc(JSON.stringify(a.value))}</td></tr>`).join("") + `</table>`;
  h += `<h4>gobj tree</h4>${tree(d.tree, "", true)}`;
  panel.innerHTML = h;
  panel.dataset.service = service;
  panel.dataset.gobj = gobj || "";
}

function tree(node, path, root) {
  if (!node) return "";
  const seen = {};
  const kids = (node.children || []).map((c) => {
    seen[c.name] = (seen[c.name] || 0) + 1;
    const name = seen[c.name] > 1 ? `${c.name}#${seen[c.name]}` : c.name;
    return tree(c, path ? `${path}\`${name}` : name, false);
  }).join("");
  const label = `<a data-tree="${esc(root ? "" : path)}">${esc(node.name)}</a> <span class="muted">${esc(node.gclass)} ${esc(node.state)}${node.running ? "" : " stopped"}${node.disabled ? " disabled" : ""}</span>`;
  return `<ul class="tree"><li>${label}${kids}</li></ul>`;
}

async function runCommand(panel, command, rowEl) {
  const kw = {};
  if (rowEl) rowEl.querySelectorAll("input[data-param]").forEach((i) => { if (i.value !== "") kw[i.dataset.param] = i.value; });
  const headers = { "Content-Type": "application/json" };
  const tok = $("#token");
  if (tok && tok.value) {
    headers["X-Gatehouse-Token"] = tok.value;
    sessionStorage.setItem("gatehouse.token", tok.value);
  }
  const out = $("#out");
  out.hidden = false;
  out.textContent = `${command} ...`;
  const body = { command, service: panel.dataset.service, gobj: panel.dataset.gobj, kw };
  const r = await fetch("api/command", { method: "POST", headers, body: JSON.stringify(body) });
  const text = await r.text();
  try {
    const env = JSON.parse(text);
    const data = env.data;
    const lines = Array.isArray(data) && data.every((x) => typeof x === "string") ? data.join("\n") : JSON.stringify(data, null, 2);
    out.textContent = `${command}: result ${env.result}${env.comment ? " \u2014 " + env.comment : ""}\n${lines}`;
  } catch (e) {
    out.textContent = `${command}: HTTP ${r.status}\n${text}`;
  }
}

document.addEventListener("click", (e) => {
  const panel = $("#detail");
  const t = e.target;
  if (t.closest(".close")) {
    panel.hidden = true;
    state.selected = null;
    return;
  }
  const run = t.closest("[data-run]");
  if (run && panel.contains(run)) {
    runCommand(panel, run.dataset.run, run.closest(".cmd"));
    return;
  }
  const node = t.closest("[data-tree]");
  if (node && panel.contains(node)) {
    openDetail(panel.dataset.service, node.dataset.tree);
    return;
  }
  const box = t.closest(".box[data-service]");
  if (box && !box.dataset.missing) openDetail(box.dataset.service, box.dataset.gobj || "");
});

// --- Updates ---

function setStatus(s, text) {
  const el = $("#status");
  el.dataset.status = s;
  el.textContent = text;
}

function onView(view) {
  const times = state.hist.times;
  // The history loaded at start may already hold this tick: add a sample only for a newer one.
  if (!times.length || view.t > times[times.length - 1]) pushFrame(view);
  render(view);
  setStatus("live", "live \u00b7 " + new Date(view.t).toLocaleTimeString());
}

async function start() {
  try {
    const h = await (await fetch("api/history")).json();
    state.capacity = h.capacity || 900;
    state.hist = { times: h.times || [], series: h.series || {} };
    const v = await (await fetch("api/view")).json();
    render(v);
    setStatus("live", "live");
  } catch (e) {
    setStatus("lost", "cannot load: " + e);
  }
  const poll = new URLSearchParams(location.search).get("poll") === "1" || typeof EventSource === "undefined";
  if (poll) {
    let last = state.view ? state.view.t : 0;
    const tick = async () => {
      try {
        const v = await (await fetch("api/view")).json();
        if (v.t !== last) {
          last = v.t;
          onView(v);
        }
      } catch (e) {
        setStatus("lost", "connection lost");
      }
      setTimeout(tick, 1000);
    };
    setTimeout(tick, 1000);
    return;
  }
  const es = new EventSource("api/events");
  es.onmessage = (m) => onView(JSON.parse(m.data));
  es.onerror = () => setStatus("lost", "reconnecting\u2026");
}

start();
