// minisched live view, step mode (docs/web.md, "Step mode"): the panel that
// shows the cycle the scheduler holds before an extension point, and the
// buttons that let it go on.
//
// The stream (app.js) hands each "step" event (web.Stepper's document) to
// this file as a "minisched-step" event on document; the buttons POST to
// api/step/{action} with the header X-Minisched-Step, and the answer is the
// new document. It uses app.js's helpers $ and el, and colours the cluster
// map (window.clusterMap, map.js) with the nodes' results when there is one.
"use strict";

// The steps of the binding cycle (the document's order has them all).
const BINDING_POINTS = new Set(["WaitOnPermit", "PreBind", "Bind", "PostBind"]);

// What each step does, in a line.
const STEP_WHAT = {
  PreFilter: "computes what Filter will read, once per pod; may reject the pod outright",
  Filter: "asks each node: can the pod run here? (nodes in parallel)",
  PostFilter: "no node fits: may make room (preemption)",
  PreScore: "computes what Score will read, once per pod",
  Score: "ranks the nodes that passed Filter; the best total wins",
  Reserve: "the pod is assumed on the chosen node: the next cycle counts it there",
  Permit: "may approve, deny, or make the pod wait",
  WaitOnPermit: "the binding cycle waits for Permit's verdict",
  PreBind: "prepares the node: volumes, device claims (writes to the apiserver)",
  Bind: "writes the binding: the pod's spec.nodeName",
  PostBind: "the pod is bound; plugins are told",
};

const stepState = {
  doc: null, // the last document
  seq: 0, // the attempt the panel shows
};

// renderStep draws a step document, unless it is older than the last one
// drawn (a control's answer can arrive after the stream's next event).
function renderStep(doc) {
  if (stepState.doc && doc.version < stepState.doc.version) return;
  stepState.doc = doc;
  const panel = $("step");
  if (panel.hidden) besideTheMap(panel);
  panel.hidden = false;
  $("step-next").disabled = !doc.current || !doc.current.paused;
  $("step-cycle").disabled = !doc.current || !doc.current.paused;
  $("step-run").hidden = !doc.stepping;
  $("step-step").hidden = doc.stepping;
  const c = doc.current;
  if (!c) {
    $("step-status").textContent = doc.stepping ? "Waiting for the scheduler's next cycle…" : "Not stepping: the scheduler runs freely.";
    $("step-body").hidden = true;
    return;
  }
  $("step-body").hidden = false;
  const cycle = `${c.cycle} cycle`;
  $("step-status").textContent = c.paused
    ? `${c.pod}, ${cycle}: held before ${c.point}.`
    : `${c.pod}, ${cycle}: last step ${c.point}. ${doc.stepping ? "Waiting for the next cycle…" : "Not stepping."}`;
  renderPoints(c, doc.order);
  $("step-what").textContent = STEP_WHAT[c.point] || "";
  renderStepList("step-plugins", c.plugins, "no plugins at this extension point");
  renderStepList("step-keys", c.keys, "none yet");
  renderStepList("step-writes", c.writes, "none yet");
  const permit = $("step-permit");
  permit.hidden = c.point !== "WaitOnPermit";
  renderStepList("step-waiting", c.waiting || [], "nobody: Permit approved the pod");
  renderNodes(c);
  renderOthers(doc.others || []);
  showOnMap(c);
}

// besideTheMap puts the panel and the cluster map (if the page has one)
// side by side at the top of the page, so that the map fills in while the
// cycle is stepped.
function besideTheMap(panel) {
  const map = $("cluster");
  if (!map || panel.parentElement.classList.contains("stepping")) return;
  const pair = el("div", { class: "stepping" });
  panel.before(pair);
  pair.append(panel, map);
}

// renderPoints lists the attempt's steps: taken (✓), now (▶), not run (–,
// struck through), or ahead; a symbol says it besides the colour.
function renderPoints(c, order) {
  const ol = $("step-points");
  ol.replaceChildren();
  const taken = new Set(c.points);
  for (const p of order) {
    let status = "ahead";
    let mark = "";
    if (p === c.point && c.paused) {
      status = "current";
      mark = "▶ ";
    } else if (taken.has(p)) {
      status = "done";
      mark = "✓ ";
    } else if (order.indexOf(p) < order.indexOf(c.point)) {
      status = "skipped";
      mark = "– ";
    }
    const li = el("li", { class: `point ${status}${BINDING_POINTS.has(p) ? " binding" : ""}`,
      title: { current: "the held step", done: "taken", skipped: "not run in this attempt", ahead: "not yet" }[status] },
      mark, p);
    if (status === "current") li.setAttribute("aria-current", "step");
    ol.append(li);
  }
}

// renderStepList fills the list id with items, or says empty.
function renderStepList(id, items, empty) {
  const list = $(id);
  list.replaceChildren();
  if (!items || items.length === 0) {
    list.append(el("li", { class: "muted" }, empty));
    return;
  }
  for (const item of items) list.append(el("li", {}, item));
}

// renderNodes tabulates the nodes' Filter verdicts and Score totals so far.
function renderNodes(c) {
  const names = [...new Set([...Object.keys(c.filter), ...Object.keys(c.scores)])].sort();
  const table = $("step-nodes");
  const body = table.querySelector("tbody");
  body.replaceChildren();
  $("step-nodes-empty").hidden = names.length > 0;
  table.hidden = names.length === 0;
  for (const n of names) {
    const f = c.filter[n];
    let verdict = "—";
    let cls = "";
    if (f && f.passed) {
      verdict = "✓ passed";
      cls = "pass";
    } else if (f) {
      verdict = `✗ ${f.plugin}: ${f.reason}`;
      cls = "fail";
    }
    const score = n in c.scores ? String(c.scores[n]) : "—";
    const chosen = c.node === n ? el("strong", {}, " ← chosen") : null;
    body.append(el("tr", {}, el("th", { scope: "row" }, n, chosen), el("td", { class: cls }, verdict),
      el("td", { class: "num" }, score)));
  }
}

// renderOthers lists the other held cycles, each with a Next and a Cycle
// of its own: a person may hold one pod's binding cycle while the next
// pod's scheduling cycle goes on (chapter 6).
function renderOthers(others) {
  const list = $("step-others");
  list.replaceChildren();
  $("step-others-part").hidden = others.length === 0;
  for (const o of others) {
    list.append(el("li", {}, `${o.pod}, ${o.cycle} cycle, before ${o.point} `,
      el("button", { type: "button", class: "step-other", "data-action": "next", "data-seq": o.seq,
        "aria-label": `Next for ${o.pod} (${o.point})` }, "Next for this one"), " ",
      el("button", { type: "button", class: "step-other", "data-action": "cycle", "data-seq": o.seq,
        "aria-label": `Cycle for ${o.pod}: let its attempt finish` }, "Let it finish")));
  }
}

// showOnMap colours the cluster map, if the page has one, by the attempt's
// results so far.
function showOnMap(c) {
  if (!window.clusterMap) return;
  if (c.seq !== stepState.seq) {
    window.clusterMap.clear();
    stepState.seq = c.seq;
  }
  const filter = {};
  const passed = [];
  for (const [n, f] of Object.entries(c.filter)) {
    if (!f.passed) filter[n] = { plugin: f.plugin, reason: f.reason };
    else if (!(n in c.scores)) passed.push(n); // not scored (yet): one feasible node, or before Score
  }
  window.clusterMap.show({ pod: c.pod, filter, scores: { ...c.scores }, passed, chosen: c.node || "", nominated: "",
    partial: c.paused });
}

// stepControl sends a control (next, cycle, run, step), for the attempt seq
// if given, and draws the answer.
async function stepControl(action, seq) {
  const query = seq ? `?seq=${encodeURIComponent(seq)}` : "";
  try {
    const resp = await fetch(`api/step/${action}${query}`, { method: "POST", headers: { "X-Minisched-Step": "1" } });
    const body = await resp.json();
    if (!resp.ok) {
      $("step-status").textContent = `The scheduler refused ${action}: ${body.error}`;
      return;
    }
    renderStep(body);
  } catch (err) {
    $("step-status").textContent = `Could not reach the scheduler: ${err.message}`;
  }
}

// onStepClick handles the panel's buttons.
function onStepClick(event) {
  const button = event.target.closest("button");
  if (!button || button.disabled) return;
  const actions = { "step-next": "next", "step-cycle": "cycle", "step-run": "run", "step-step": "step" };
  if (actions[button.id]) stepControl(actions[button.id]);
  else if (button.matches("button.step-other")) stepControl(button.dataset.action, button.dataset.seq);
}

// onStepKey: n, c, r and s press Next, Cycle, Run and Step, unless focus is
// in a field or a modifier is held.
function onStepKey(event) {
  if ($("step").hidden || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.target.closest("input, textarea, select, [contenteditable]")) return;
  const ids = { n: "step-next", c: "step-cycle", r: "step-run", s: "step-step" };
  const id = ids[event.key];
  if (!id) return;
  const button = $(id);
  if (button.hidden || button.disabled) return;
  event.preventDefault();
  button.click();
}

document.addEventListener("minisched-step", (e) => renderStep(e.detail));
$("step").addEventListener("click", onStepClick);
document.addEventListener("keydown", onStepKey);
