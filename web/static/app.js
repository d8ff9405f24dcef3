// minisched live view: the scheduling queue as it moves, and why each pod
// is where it is.
//
// The page reads the scheduler's read-only API (docs/web.md):
//   - api/stream, Server-Sent Events: "queue" (the whole queue document,
//     whenever it changes) and "attempt" (one timeline entry as an attempt
//     ends; a pod group's attempt is an entry of its own, which its members'
//     entries fill in);
//   - api/attempts, the timeline so far;
//   - api/pods/{namespace}/{name}, one pod's attempts, tables and events.
// In step mode the stream also carries "step" events, which step.js draws.
// The cluster map (map.js) takes the stream's "cluster" events.
// Server text is always put in the page as text (textContent, text nodes),
// never parsed as HTML.
"use strict";

// The queue lists, as named in the queue document and in the page: the five
// of the queue, then the pod-group members waiting outside it.
const LISTS = ["activeQ", "backoffQ", "unschedulable", "inFlight", "nominated", "incompletePodGroups", "pendingPodGroups"];

// What each shape of a pod-group member's message says (attempt.Shape; ""
// for a member that went on to binding).
const SHAPES = {
  placedGroupFailed: "1: the group's message",
  fitNowhere: "2: its own message",
  notTried: "3: the group's status then",
  error: "4: the error",
  "": "went on to binding",
};

const LIMIT_STEP = 100; // a "show more" button raises the stream's limit by this
const LIMIT_MAX = 5000; // the server's largest limit
const TIMELINE_MAX = 500; // timeline entries kept in the page
const RETRY_MS = 3000; // wait before reopening a stream the server refused

const state = {
  limit: 100, // entries per list the stream asks for
  source: null, // the open EventSource
  retryTimer: 0,
  backoffBase: 0, // performance.now() when backoffQ was last drawn
  selected: "", // the pod ("namespace/name") whose detail is open
  opener: null, // {list, pod}: where focus returns when the detail closes
  detailRequest: 0, // number of the latest detail fetch; older answers are dropped
  selectedWhere: "", // the list that held the selected pod in the last queue document
  lastSeq: 0, // the highest attempt seq seen
  openLabels: new Set(), // unschedulable entries (pod or group name) whose event labels are shown
};

// $ returns the element with that id.
function $(id) {
  return document.getElementById(id);
}

// el makes an element with attributes and children; strings become text
// nodes, and null, undefined or false children are skipped.
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else node.setAttribute(name, String(value));
  }
  node.append(...children.filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

// ---- Formatting ----

// clock formats a timestamp as the local time of day, with milliseconds.
function clock(iso) {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return "";
  const hms = t.toLocaleTimeString([], { hour12: false });
  return `${hms}.${String(t.getMilliseconds()).padStart(3, "0")}`;
}

// duration formats milliseconds briefly: 1.5s, 42s, 3m 4s, 2h 5m.
function duration(ms) {
  const s = Math.max(0, ms) / 1000;
  if (s < 10) return `${s.toFixed(1)}s`;
  if (s < 60) return `${Math.floor(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${Math.floor(s % 60)}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

// waited says how long ago `since` was, seen from the server's `now`.
function waited(since, now) {
  const ms = Date.parse(now) - Date.parse(since);
  return Number.isNaN(ms) ? "" : duration(ms);
}

// plural writes "1 attempt", "2 attempts".
function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

// ---- Connection ----

// connect opens the stream with the current limit, closing any previous one
// (a closed EventSource fires no more events).
function connect() {
  clearTimeout(state.retryTimer);
  if (state.source) state.source.close();
  setStatus(false);
  // The map's grouping label (the page's ?zoneLabel=) goes to the stream's
  // "cluster" events too.
  const zoneLabel = new URLSearchParams(location.search).get("zoneLabel");
  state.source = new EventSource(`api/stream?limit=${state.limit}` +
    (zoneLabel ? `&zoneLabel=${encodeURIComponent(zoneLabel)}` : ""));
  state.source.addEventListener("open", onStreamOpen);
  state.source.addEventListener("error", onStreamError);
  state.source.addEventListener("queue", (e) => renderQueue(JSON.parse(e.data)));
  state.source.addEventListener("attempt", (e) => onAttempt(JSON.parse(e.data)));
  // Step mode's document goes to step.js.
  state.source.addEventListener("step", (e) =>
    document.dispatchEvent(new CustomEvent("minisched-step", { detail: JSON.parse(e.data) })));
  window.clusterMap?.listen(state.source); // map.js: the "cluster" events
}

// onStreamOpen shows the stream is live and loads the timeline so far: at
// load, and after a reconnection, since attempts may have ended meanwhile.
function onStreamOpen() {
  setStatus(true);
  loadTimeline();
}

// onStreamError shows the stream is down. EventSource reconnects by itself,
// unless the server refused the stream (an error status): then the page
// tries again a little later.
function onStreamError() {
  setStatus(false);
  if (state.source.readyState === EventSource.CLOSED) {
    state.retryTimer = setTimeout(connect, RETRY_MS);
  }
}

// setStatus writes the connection state in the header.
function setStatus(live) {
  const status = $("status");
  status.textContent = live ? "live" : "connecting…";
  status.dataset.live = live ? "1" : "0";
}

// showMore raises the limit of every list and reopens the stream with it.
function showMore() {
  state.limit = Math.min(state.limit + LIMIT_STEP, LIMIT_MAX);
  connect();
}

// ---- The queue ----

// renderQueue draws a queue document: the counts and the five lists.
function renderQueue(doc) {
  const focus = focusedPod();
  const labelsFocus = focusedLabels();
  const attached = doc.scheduler !== false;
  $("no-scheduler").hidden = attached;
  $("queues").hidden = !attached;
  for (const list of LISTS) {
    renderList(list, doc[list] || [], doc.counts?.[list] ?? 0, doc.now);
  }
  $("groups-waiting").hidden = !doc.counts?.incompletePodGroups && !doc.counts?.pendingPodGroups;
  state.backoffBase = performance.now();
  restoreFocus(focus);
  restoreLabelsFocus(labelsFocus);
  refreshMovedDetail(doc);
  document.body.dataset.ready = "1";
}

// refreshMovedDetail reloads the open detail when its pod moved to another
// list (or left them all), so that its location stays true.
function refreshMovedDetail(doc) {
  if (!state.selected) return;
  const where = LISTS.find((list) => (doc[list] || []).some((e) => holds(e, state.selected))) || "";
  if (where !== state.selectedWhere) {
    state.selectedWhere = where;
    loadDetail();
  }
}

// holds says whether a list entry is the pod, or a group it is a member of
// (an entry of activeQ, backoffQ or unschedulable has the group under
// "group"; one of the waiting lists is the group).
function holds(entry, pod) {
  return entry.pod === pod || (entry.group ?? entry).members?.some((m) => m.pod === pod) === true;
}

// renderList draws one list, its count, and "showing N of M" with a
// "show more" button when the server cut the list.
function renderList(list, entries, total, now) {
  $(list).replaceChildren(...entries.map((entry) => ITEMS[list](entry, now)));
  $(`count-${list}`).textContent = String(total);
  const cut = entries.length < total;
  $(`shown-${list}`).textContent = cut ? `showing ${entries.length} of ${total}` : "";
  $(`more-${list}`).hidden = !cut || state.limit >= LIMIT_MAX;
}

// podItem makes a list entry: a button with the pod's name, which opens its
// detail, followed by the given lines.
function podItem(pod, attrs, ...lines) {
  const li = el("li", { "data-pod": pod, ...attrs }, podButton(pod), ...lines);
  li.classList.toggle("selected", pod === state.selected);
  return li;
}

// podButton makes the focusable button naming a pod.
function podButton(pod) {
  return el("button", { type: "button", class: "pod", "aria-controls": "detail" }, pod);
}

// groupItem makes a pod group's entry: its name and policy, the given
// lines, then its members, each a pod that opens its detail.
function groupItem(g, attrs, ...lines) {
  const policy = g.policy === "gang" ? `gang, minCount ${g.minCount}` : g.policy;
  return el(
    "li",
    { class: "group", "data-group": g.name, "data-policy": g.policy || "", ...attrs },
    groupName(g.name),
    ...lines,
    policy ? meta(policy) : null,
    el("ul", { class: "members", "aria-label": `members of ${g.name}` }, ...(g.members || []).map(memberItem)),
  );
}

// groupName makes the label naming a pod group.
function groupName(name) {
  return el("span", { class: "group-name" }, el("span", { class: "group-mark" }, "pod group"), name);
}

// memberItem makes a member's line in a group's entry: the plugins that
// rejected or gate it, and its attempts.
function memberItem(m) {
  const plugins = m.plugins || [];
  return podItem(
    m.pod,
    { "data-plugins": plugins.join(",") },
    plugins.length || m.gatingPlugin ? pluginChips(plugins, m.gatingPlugin) : null,
    el("span", { class: "meta" }, plural(m.attempts, "attempt")),
  );
}

// meta makes a small line of facts under a pod's name.
function meta(...parts) {
  return el("span", { class: "meta" }, parts.filter(Boolean).join(" · "));
}

// entityItem makes an entry of activeQ, backoffQ or unschedulable: a pod's,
// or a pod group's with its members, with the same lines.
function entityItem(e, attrs, ...lines) {
  return e.group ? groupItem(e.group, attrs, ...lines) : podItem(e.pod, attrs, ...lines);
}

// One function per list makes an entry from the queue document's object.
const ITEMS = {
  // activeQ: waiting to be popped, in pop order.
  activeQ: (e, now) =>
    entityItem(e, {}, meta(`prio ${e.priority}`, plural(e.attempts, "attempt"), `waiting ${waited(e.since, now)}`)),

  // backoffQ: serving a backoff after a failed attempt; the remaining time
  // counts down locally (tickBackoff) until the next queue document.
  backoffQ: (e) =>
    entityItem(
      e,
      { "data-backoff-ms": e.backoffRemainingMs ?? 0 },
      el("span", { class: "remaining" }, `${duration(e.backoffRemainingMs ?? 0)} left`),
      meta(`prio ${e.priority}`, plural(e.attempts, "attempt")),
    ),

  // unschedulable: parked until one of `events` happens; the chips are the
  // plugins that rejected the pod, the gating (PreEnqueue) plugin marked (a
  // group is here only when a member's gate keeps it out of activeQ).
  unschedulable: (e, now) =>
    entityItem(
      e,
      { "data-plugins": (e.plugins || []).join(",") },
      pluginChips(e.plugins || [], e.gatingPlugin),
      meta(`prio ${e.priority}`, plural(e.attempts, "attempt"), `waiting ${waited(e.since, now)}`),
      movedBy(e),
    ),

  // inFlight: its scheduling cycle runs, it waits on Permit, or it binds.
  inFlight: (e) =>
    podItem(
      e.pod,
      { "data-phase": e.phase },
      el("span", { class: `badge phase-${e.phase}` }, e.phase),
      e.node ? el("span", { class: "meta" }, ` on ${e.node}`) : null,
    ),

  // nominated: preemption made room for the pod on this node.
  nominated: (e) => podItem(e.pod, { "data-node": e.node }, el("span", { class: "meta" }, `→ ${e.node}`)),

  // incompletePodGroups: members waiting, outside the queue, for their
  // PodGroup to be seen.
  incompletePodGroups: (g) => groupItem(g, {}, meta("waiting for their PodGroup")),

  // pendingPodGroups: members that arrived (or came back) while their group
  // was being scheduled; they join it when the attempt ends.
  pendingPodGroups: (g) => groupItem(g, {}, meta("arrived while the group was being scheduled")),
};

// movedBy says which events would move an unschedulable entry: each group
// of events in words (the server's eventGroups), and upstream's labels for
// them behind a disclosure that stays open across redraws.
function movedBy(e) {
  const groups = e.eventGroups || [];
  if (groups.length === 0) return null;
  const key = e.pod ?? e.group.name;
  const labels = el(
    "details",
    { class: "event-labels", "data-entry": key, open: state.openLabels.has(key) },
    el("summary", {}, "upstream's labels"),
    el("ul", {}, ...groups.flatMap((g) => g.labels.map((label) => el("li", {}, el("code", {}, label))))),
  );
  labels.addEventListener("toggle", () => {
    if (labels.open) state.openLabels.add(key);
    else state.openLabels.delete(key);
  });
  return el(
    "div",
    { class: "moved-by" },
    el("span", { class: "moved-by-title" }, "Moved back to the queue when:"),
    el("ul", { class: "event-words" }, ...groups.map((g) => el("li", {}, g.words))),
    labels,
  );
}

// focusedLabels returns the entry whose labels' disclosure has the focus,
// so that a redraw can give it back (restoreLabelsFocus).
function focusedLabels() {
  const summary = document.activeElement;
  if (!summary || !summary.matches(".event-labels > summary")) return null;
  return summary.parentElement.dataset.entry;
}

// restoreLabelsFocus focuses the entry's labels' disclosure after a redraw,
// if the entry is still there.
function restoreLabelsFocus(entry) {
  if (!entry) return;
  document.querySelector(`.event-labels[data-entry="${CSS.escape(entry)}"] > summary`)?.focus({ preventScroll: true });
}

// pluginChips shows the rejecting plugins as chips; the gating plugin's chip
// is marked, and added if it did not reject the pod itself.
function pluginChips(plugins, gating) {
  const names = gating && !plugins.includes(gating) ? [...plugins, gating] : plugins;
  const chips = names.map((name) =>
    name === gating
      ? el("span", { class: "chip gate", title: "PreEnqueue plugin: keeps the pod out of activeQ" },
          el("span", { class: "gate-mark" }, "gate"), name)
      : el("span", { class: "chip" }, name),
  );
  return el("span", { class: "chips" }, ...chips);
}

// tickBackoff counts the backoffQ's remaining times down between queue
// documents.
function tickBackoff() {
  const elapsed = performance.now() - state.backoffBase;
  for (const li of $("backoffQ").children) {
    const left = Number(li.dataset.backoffMs) - elapsed;
    li.querySelector(".remaining").textContent = left > 0 ? `${duration(left)} left` : "due";
  }
}

// ---- Focus across redraws ----

// focusedPod says which pod button has the focus (list, pod, position), so
// that a redraw of the lists can give it back.
function focusedPod() {
  const button = document.activeElement;
  if (!button || !button.matches("button.pod")) return null;
  const li = button.closest("li");
  const list = listOf(li);
  return { list: list.id, pod: li.dataset.pod, index: [...list.querySelectorAll("li[data-pod]")].indexOf(li) };
}

// listOf returns the list (a queue list or the timeline) an entry is in,
// a group's member's included.
function listOf(li) {
  return li.parentElement.closest(".pods, #timeline");
}

// restoreFocus focuses the pod's new button after a redraw; if the pod left
// the list, the entry that took its place.
function restoreFocus(focus) {
  if (!focus) return;
  const list = $(focus.list);
  const entries = list.querySelectorAll("li[data-pod]");
  const li = podEntry(list, focus.pod) || entries[Math.min(focus.index, entries.length - 1)];
  li?.querySelector("button.pod")?.focus({ preventScroll: true });
}

// podEntry finds a pod's (first) entry in a list, or in the whole page.
function podEntry(list, pod) {
  return list.querySelector(`li[data-pod="${CSS.escape(pod)}"]`);
}

// ---- The timeline ----

// loadTimeline fetches the attempts the server kept and merges them in.
async function loadTimeline() {
  try {
    const res = await fetch("api/attempts");
    if (!res.ok) return;
    const doc = await res.json();
    for (const attempt of doc.attempts || []) {
      state.lastSeq = Math.max(state.lastSeq, attempt.seq);
      insertAttempt(attempt);
    }
  } catch {
    // The stream's error handler already shows that the server is away.
  }
}

// onAttempt adds an attempt that just ended, and refreshes the open detail
// if it is about the same pod. A gap in the numbers means the server dropped
// some for this page (it was slow to read): the timeline is read again.
function onAttempt(attempt) {
  if (state.lastSeq > 0 && attempt.seq > state.lastSeq + 1) loadTimeline();
  state.lastSeq = Math.max(state.lastSeq, attempt.seq);
  insertAttempt(attempt);
  if (attempt.pod === state.selected) loadDetail();
}

// insertAttempt puts an attempt in the timeline once, newest (highest seq)
// first, and drops the oldest beyond TIMELINE_MAX. A pod group's member
// whose group's entry is shown fills in its line there instead.
function insertAttempt(a) {
  const timeline = $("timeline");
  if (timeline.querySelector(`li[data-seq="${Number(a.seq)}"]`)) return;
  const group = a.groupSeq ? timeline.querySelector(`:scope > li[data-seq="${Number(a.groupSeq)}"]`) : null;
  const member = group ? podEntry(group, a.pod) : null;
  if (member) {
    memberOutcome(member, a);
    return;
  }
  const older = [...timeline.children].find((li) => Number(li.dataset.seq) < a.seq);
  timeline.insertBefore(a.groupAttempt ? groupAttemptItem(a) : attemptItem(a), older || null);
  while (timeline.children.length > TIMELINE_MAX) timeline.lastElementChild.remove();
}

// groupAttemptItem makes a pod group's timeline entry: time, group, its
// attempt number, its verdict, PlacementFeasible's arithmetic and the
// group's message, then each member in the order the cycle tried them:
// where it went in the simulation and the shape of its message.
function groupAttemptItem(a) {
  const g = a.groupAttempt;
  const f = g.feasibility;
  const policy = g.policy === "gang" ? `gang, minCount ${g.minCount}` : g.policy;
  const arithmetic = f
    ? `minCount ${f.minCount}: ${f.scheduled} scheduled, ${f.remaining} remaining → ${f.satisfied ? "satisfied" : f.reason}`
    : "";
  const said = [policy, arithmetic, a.message, g.waitingOnPreemption ? "waiting on preemption" : ""]
    .filter(Boolean)
    .join(" — ");
  const namespace = a.podGroup.slice(0, a.podGroup.indexOf("/"));
  return el(
    "li",
    { class: `group result-${a.result}`, "data-group": a.podGroup, "data-result": a.result, "data-seq": a.seq },
    el("time", { datetime: a.time }, clock(a.time)),
    groupName(a.podGroup),
    el("span", { class: "nth", title: "the group's attempt number" }, `#${a.attempt}`),
    el("span", { class: "result" }, a.result),
    el("span", { class: "said", title: said }, said),
    el(
      "ul",
      { class: "members", "aria-label": `members of ${a.podGroup}, in the order tried` },
      ...(g.members || []).map((m) => memberAttemptItem(`${namespace}/${m.pod}`, m)),
      g.omittedMembers ? el("li", { class: "muted" }, `and ${g.omittedMembers} more`) : null,
    ),
  );
}

// memberAttemptItem makes a member's line in its group's timeline entry.
function memberAttemptItem(pod, m) {
  let where = m.node ? `placed on ${m.node}` : m.tried ? m.message || "" : "not tried";
  if (m.nominatedNode) where += `; nominated to ${m.nominatedNode}`;
  const outcome = m.node ? "placed" : m.tried ? "fitNowhere" : "notTried";
  const li = el(
    "li",
    { "data-pod": pod, "data-simulation": outcome, "data-shape": m.shape || "" },
    podButton(pod),
    el("span", { class: "simulation", title: where }, where),
    el("span", { class: "shape", title: "the shape of its message" }, SHAPES[m.shape || ""]),
    el("span", { class: "final" }),
  );
  li.classList.toggle("selected", pod === state.selected);
  return li;
}

// memberOutcome writes a member's own attempt (its result, its node once
// bound) on its line in the group's entry.
function memberOutcome(li, a) {
  li.dataset.seq = a.seq;
  li.dataset.result = a.result;
  const final = li.querySelector(".final");
  final.className = `final final-${a.result}`;
  final.textContent = a.result === "Scheduled" ? `bound to ${a.node || "?"}` : a.result;
}

// attemptItem makes a timeline entry: time, pod, attempt number, result,
// and the node or the message.
function attemptItem(a) {
  const said = attemptSummary(a);
  const li = el(
    "li",
    { "data-pod": a.pod, "data-result": a.result, "data-seq": a.seq, class: `result-${a.result}` },
    el("time", { datetime: a.time }, clock(a.time)),
    podButton(a.pod),
    el("span", { class: "nth", title: "attempt number" }, `#${a.attempt}`),
    el("span", { class: "result" }, a.result),
    el("span", { class: "said", title: said }, said),
  );
  li.classList.toggle("selected", a.pod === state.selected);
  return li;
}

// attemptSummary is the one line an attempt ends with: the node it was
// bound to, or the message, with the nomination if it preempted (and the
// pod group of a member whose group's entry is not shown).
function attemptSummary(a) {
  const group = a.podGroup ? `pod group ${a.podGroup}` : "";
  if (a.result === "Scheduled") return [`→ ${a.node || "?"}`, group].filter(Boolean).join(" — ");
  const parts = [a.message || "", group];
  if (a.nominatedNode) {
    const victims = a.victims?.length ? a.victims.join(", ") : "none";
    parts.push(`nominated to ${a.nominatedNode} (victims: ${victims})`);
  }
  return parts.filter(Boolean).join(" — ");
}

// ---- The detail panel ----

// openDetail shows a pod's detail and remembers which entry opened it.
function openDetail(pod, list) {
  const fresh = pod !== state.selected;
  state.selected = pod;
  state.selectedWhere = list || "";
  state.opener = { list, pod };
  $("detail").hidden = false;
  $("detail-pod").textContent = pod;
  if (fresh) $("detail-body").replaceChildren(el("p", { class: "muted" }, "loading…"));
  markSelected();
  loadDetail();
  $("detail-close").focus();
}

// closeDetail hides the detail and gives the focus back to the pod's entry.
function closeDetail() {
  const opener = state.opener;
  state.selected = "";
  state.detailRequest++; // an answer still on its way is no longer wanted
  $("detail").hidden = true;
  markSelected();
  if (!opener) return;
  const li = podEntry($(opener.list), opener.pod) || podEntry(document, opener.pod);
  li?.querySelector("button.pod")?.focus();
}

// markSelected highlights the entries of the pod whose detail is open.
function markSelected() {
  for (const li of document.querySelectorAll("li[data-pod]")) {
    li.classList.toggle("selected", li.dataset.pod === state.selected);
  }
}

// loadDetail fetches the selected pod and draws it, unless another pod was
// selected (or the panel closed) in the meantime.
async function loadDetail() {
  const request = ++state.detailRequest;
  const pod = state.selected;
  const slash = pod.indexOf("/");
  const url = `api/pods/${encodeURIComponent(pod.slice(0, slash))}/${encodeURIComponent(pod.slice(slash + 1))}`;
  let content;
  try {
    const res = await fetch(url);
    if (res.status === 404) content = [el("p", { class: "muted" }, "This pod does not exist (any more).")];
    else if (!res.ok) content = [el("p", { class: "error" }, `Could not load the pod: ${res.status} ${res.statusText}`)];
    else content = podDetail(await res.json());
  } catch (err) {
    content = [el("p", { class: "error" }, `Could not load the pod: ${err.message}`)];
  }
  if (request === state.detailRequest) $("detail-body").replaceChildren(...content);
}

// podDetail lays out one pod: where it is, its attempts newest first (or the
// last record from its annotation), and its scheduling events.
function podDetail(p) {
  const where = [`location: ${p.location || "unknown"}`, p.nodeName ? `node: ${p.nodeName}` : ""];
  const parts = [el("p", { class: "location" }, where.filter(Boolean).join(" · "))];
  const attempts = [...(p.attempts || [])].sort((a, b) => b.seq - a.seq);
  if (attempts.length > 0) {
    parts.push(el("h3", {}, "Attempts recorded while watching"), ...attempts.map(recordSection));
  } else if (p.lastRecord) {
    parts.push(el("h3", {}, "Last attempt (from the pod's annotation)"), recordSection(p.lastRecord));
  } else {
    parts.push(el("p", { class: "muted" }, "No attempt recorded while this page was open."));
  }
  parts.push(el("h3", {}, "Events"), eventsPart(p.events || [], p.eventsError));
  return parts;
}

// recordSection shows one attempt's record: result, time and message, a
// pod-group member's group section, the Filter and Score tables, the
// outcome, and the same as plain text.
function recordSection(r) {
  return el(
    "section",
    { class: `record result-${r.result}` },
    el("h4", {}, el("span", { class: "result" }, r.result || "?"), r.node ? ` on ${r.node}` : "",
      ` · attempt ${r.attempt} · `, el("time", { datetime: r.time }, clock(r.time))),
    r.message ? el("p", { class: "message" }, r.message) : null,
    tableBlock(r.group, "group"),
    tableBlock(r.filter, "filter"),
    tableBlock(r.score, "score"),
    ...(r.outcome || []).map((line) => el("p", { class: "outcome" }, line)),
    r.text ? el("details", {}, el("summary", {}, "as minisched explain prints it"), el("pre", {}, r.text)) : null,
  );
}

// tableBlock shows a group, Filter or Score part: its title, the table (if it has
// columns) and its notes. It returns null when the part is missing.
function tableBlock(part, kind) {
  if (!part) return null;
  const block = el("div", { class: "table-block" }, el("p", { class: "table-title" }, part.title || ""));
  if (part.columns?.length) {
    const head = el("tr", {}, ...part.columns.map((c) => el("th", { scope: "col" }, c)));
    const rows = (part.rows || []).map((row) => el("tr", {}, ...row.map((cell, i) => tableCell(cell, i, kind))));
    const table = el("table", { class: kind }, el("thead", {}, head), el("tbody", {}, ...rows));
    block.append(el("div", { class: "scroll" }, table));
  }
  if (part.notes?.length) block.append(el("ul", { class: "notes" }, ...part.notes.map((n) => el("li", {}, n))));
  return block;
}

// tableCell makes a cell; in the Filter table, a verdict cell is marked as
// passed (✓), not run (–), skipped, or a rejection (the reason).
function tableCell(text, column, kind) {
  const td = el("td", {}, text);
  if (kind === "filter" && column > 0) {
    td.className = { "✓": "passed", "–": "not-run", skip: "skipped" }[text] || "rejected";
  }
  return td;
}

// eventsPart shows the pod's scheduling events, or why they could not be read.
function eventsPart(events, error) {
  if (error) return el("p", { class: "error" }, `Events could not be read: ${error}`);
  if (events.length === 0) return el("p", { class: "muted" }, "No scheduling event.");
  const head = el("tr", {}, ...["Reason", "Count", "Time", "Message"].map((c) => el("th", { scope: "col" }, c)));
  const rows = events.map((e) =>
    el("tr", {}, el("td", {}, e.reason), el("td", { class: "num" }, String(e.count)),
      el("td", {}, el("time", { datetime: e.time }, clock(e.time))), el("td", {}, e.message)),
  );
  return el("div", { class: "scroll" }, el("table", { class: "events" }, el("thead", {}, head), el("tbody", {}, ...rows)));
}

// ---- Start ----

// onClick opens the detail of a clicked pod (Enter and Space click a
// focused button too), and handles the "show more" and close buttons.
function onClick(event) {
  const button = event.target.closest("button");
  if (!button) return;
  if (button.matches("button.pod")) {
    const li = button.closest("li");
    openDetail(li.dataset.pod, listOf(li).id);
  } else if (button.matches("button.more")) {
    showMore();
  } else if (button.id === "detail-close") {
    closeDetail();
  }
}

// onKey closes the detail on Escape.
function onKey(event) {
  if (event.key === "Escape" && !$("detail").hidden) {
    event.preventDefault();
    closeDetail();
  }
}

// start wires the page up and opens the stream.
function start() {
  document.addEventListener("click", onClick);
  document.addEventListener("keydown", onKey);
  setInterval(tickBackoff, 200);
  connect(); // its opening also loads the timeline so far (onStreamOpen)
}

start();
