// minisched live view: the cluster map. Zones as groups, nodes as tiles
// (bars for cpu, memory, pods, extended resources and DRA devices; badges for taints and
// cordon; pods as marks), or, in a zone of many nodes, as compact cells
// shaded by use. Choosing a pod colours the map by its last attempt.
//
// It reads api/cluster (the document; the stream's "cluster" event carries
// it when it changes), api/cluster?zone=NAME (one zone's nodes, when the
// document is a summary) and api/cluster/pods/{namespace}/{name} (a pod's
// last attempt, as clusterMap.show takes it). It defines window.clusterMap:
//   - show(result): colour the map by one attempt (see docs/web.md; step.js
//     adds `passed`, the nodes that passed Filter without a score yet);
//   - clear(): back to the plain map;
//   - showPod(pod): fetch a pod's last attempt and show it;
//   - listen(source): take "cluster" events from the page's EventSource.
// Server text is always put in the page as text, never parsed as HTML.
"use strict";

(() => {
  const COMPACT_NODES = 60; // a zone with more nodes is drawn as cells
  const MARKS_PER_TILE = 12; // pod marks drawn on a tile; the node panel lists all
  const ZONE_REFETCH_MS = 3000; // an open zone of a summary is re-read at most this often

  const map = {
    doc: null, // the last cluster document
    zones: new Map(), // zone name → its nodes, read with ?zone= (summary documents)
    fetched: new Map(), // zone name → performance.now() of its last read
    open: new Set(), // zones the user opened (summary documents)
    result: null, // the attempt the map is coloured by
    node: "", // the node whose panel is open
    opener: "", // the pod whose mark opened the detail
    resultRequest: 0, // number of the latest showPod fetch
  };

  // mk makes an element with attributes and children (strings become text).
  function mk(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "class") node.className = value;
      else node.setAttribute(name, String(value));
    }
    node.append(...children.filter((c) => c !== null && c !== undefined && c !== false));
    return node;
  }

  const byId = (id) => document.getElementById(id);

  // fraction is requested over allocatable, 0 when nothing is allocatable.
  function fraction(a) {
    return a && a.allocatable > 0 ? a.requested / a.allocatable : 0;
  }

  function percent(a) {
    return `${Math.round(fraction(a) * 100)}%`;
  }

  // quantity writes cpu in cores, memory in GiB or MiB, the rest as is.
  function quantity(kind, v) {
    if (kind === "cpu") return `${+(v / 1000).toFixed(2)}`;
    if (kind === "memory") return v >= 1 << 30 ? `${+(v / (1 << 30)).toFixed(1)}Gi` : `${Math.round(v / (1 << 20))}Mi`;
    return String(v);
  }

  // ---- The document ----

  // zoneLabelQuery is the page's ?zoneLabel= (the label the nodes are
  // grouped by, picked in the form above the map), for api/cluster, after
  // sep; "" for the default, topology.kubernetes.io/zone.
  function zoneLabelQuery(sep) {
    const label = new URLSearchParams(location.search).get("zoneLabel");
    return label ? `${sep}zoneLabel=${encodeURIComponent(label)}` : "";
  }

  async function load() {
    try {
      const res = await fetch(`api/cluster${zoneLabelQuery("?")}`);
      if (res.ok) onDocument(await res.json());
    } catch (err) {
      byId("cluster-hint").textContent = `could not load the cluster: ${err.message}`;
    }
  }

  // onDocument draws a new document, and re-reads the open zones of a
  // summary (no more often than ZONE_REFETCH_MS).
  function onDocument(doc) {
    map.doc = doc;
    if (!doc.summary) map.zones.clear();
    const zones = (doc.zones || []).map((z) => z.name);
    if (doc.summary && zones.length === 1) map.open.add(zones[0]); // nothing else to choose
    render();
    if (!doc.summary) return;
    for (const name of map.open) {
      if (zones.includes(name) && !(performance.now() - (map.fetched.get(name) || -1e9) < ZONE_REFETCH_MS)) {
        loadZone(name);
      }
    }
  }

  async function loadZone(name) {
    map.fetched.set(name, performance.now());
    try {
      const res = await fetch(`api/cluster?zone=${encodeURIComponent(name)}${zoneLabelQuery("&")}`);
      if (!res.ok) return;
      const doc = await res.json();
      const zone = (doc.zones || []).find((z) => z.name === name);
      map.zones.set(name, zone?.nodeList || []);
      render();
    } catch {
      map.fetched.delete(name);
    }
  }

  // nodesOf is a zone's nodes as far as they are known (null: not read yet).
  function nodesOf(zone) {
    if (!map.doc.summary) return zone.nodeList || [];
    return map.zones.get(zone.name) || null;
  }

  // ---- Drawing ----

  function render() {
    const doc = map.doc;
    if (!doc) return;
    const focus = document.activeElement?.closest?.("#cluster [data-key]")?.dataset.key;
    const hint = byId("cluster-hint");
    byId("cluster-final").hidden = !doc.final;
    byId("cluster-final").textContent = doc.final ? `Final state: ${doc.final}.` : "";
    if (!doc.scheduler && !doc.final) hint.textContent = "no scheduler attached";
    else hint.textContent = `${doc.nodes} ${doc.nodes === 1 ? "node" : "nodes"} by ${doc.zoneLabel}` + (doc.summary ? " (open a zone to see its nodes)" : "");
    byId("cluster-zones").replaceChildren(...(doc.zones || []).map(zoneSection));
    renderLegend();
    renderNodePanel();
    if (focus) byId("cluster").querySelector(`[data-key="${CSS.escape(focus)}"]`)?.focus({ preventScroll: true });
  }

  function zoneSection(z) {
    const nodes = nodesOf(z);
    const open = !map.doc.summary || map.open.has(z.name);
    const sums = [`${z.nodes} node${z.nodes === 1 ? "" : "s"}`, `cpu ${percent(z.usage.cpu)}`,
      `memory ${percent(z.usage.memory)}`, `pods ${z.pods}`];
    if (z.assumed) sums.push(`${z.assumed} binding`);
    if (z.nominated) sums.push(`${z.nominated} nominated`);
    if (z.cordoned) sums.push(`${z.cordoned} cordoned`);
    if (z.tainted) sums.push(`${z.tainted} tainted`);
    const counts = resultCounts(nodes);
    if (counts) sums.push(counts);
    const title = map.doc.summary
      ? mk("button", { type: "button", class: "zone-toggle", "aria-expanded": String(open), "data-zone": z.name,
        "data-key": `zone:${z.name}` }, open ? "▾ " : "▸ ", z.name)
      : z.name;
    const section = mk("section", { class: "zone", "data-zone-name": z.name },
      mk("h3", {}, title, " ", mk("span", { class: "zone-sums" }, sums.join(" · "))));
    if (!open) return section;
    if (nodes === null) {
      section.append(mk("p", { class: "muted" }, "loading the zone's nodes…"));
      return section;
    }
    if (nodes.length > COMPACT_NODES) {
      section.append(mk("div", { class: "cells", role: "list", "aria-label": `nodes of ${z.name}` }, ...nodes.map(cell)));
    } else {
      section.append(mk("div", { class: "tiles" }, ...nodes.map(tile)));
    }
    return section;
  }

  // verdict is what the shown attempt says of a node: null (no attempt
  // shown, or not evaluated), or {kind, text, symbol, shade}.
  function verdict(name) {
    const r = map.result;
    if (!r) return null;
    if (r.chosen === name) return { kind: "chosen", symbol: "★", text: scoreText(r, name, "chosen") };
    const refused = r.filter?.[name] || (r.preFilter ? r.preFilter : null);
    if (refused) return { kind: "refused", symbol: "✗", text: `${refused.plugin}: ${refused.reason}` };
    if (r.scores && name in r.scores) {
      return { kind: "passed", symbol: "✓", text: scoreText(r, name, "passed"), shade: shadeOf(r, name) };
    }
    if (r.passed?.includes(name)) return { kind: "passed", symbol: "✓", text: "passed Filter (not scored)", shade: 0 };
    if (r.nominated === name) return { kind: "nominated-to", symbol: "◆", text: "nominated here" };
    return null;
  }

  function scoreText(r, name, word) {
    if (!r.scores || !(name in r.scores)) return word;
    if (r.scored === false) return `${word} (passed Filter; no node was scored)`;
    return `${word} · score ${r.scores[name]}`;
  }

  // shadeOf places a passed node's score among the others': 0 (lowest) to 4.
  function shadeOf(r, name) {
    const all = Object.values(r.scores);
    const lo = Math.min(...all);
    const hi = Math.max(...all);
    return hi > lo ? Math.round(((r.scores[name] - lo) / (hi - lo)) * 4) : 4;
  }

  // resultCounts sums the shown attempt over a zone's known nodes.
  function resultCounts(nodes) {
    if (!map.result || !nodes) return "";
    let refused = 0;
    let passed = 0;
    for (const n of nodes) {
      const v = verdict(n.name);
      if (v?.kind === "refused") refused++;
      else if (v && v.kind !== "nominated-to") passed++;
    }
    return refused + passed ? `${refused} refused, ${passed} passed` : "";
  }

  // bar is one resource's use: its numbers as text, and a filled track
  // (its width set through the CSSOM, which the page's CSP allows).
  function bar(label, a, kind) {
    const f = Math.min(fraction(a), 1);
    const fill = mk("span", { class: `bar-fill level-${Math.min(4, Math.floor(f * 5))}` });
    fill.style.width = `${Math.round(f * 100)}%`;
    return mk("div", { class: "bar" },
      mk("span", { class: "bar-label" }, `${label} ${quantity(kind, a.requested)}/${quantity(kind, a.allocatable)}`),
      mk("span", { class: "bar-track", "aria-hidden": "true" }, fill));
  }

  function badges(n) {
    const out = [];
    if (n.unschedulable) out.push(mk("span", { class: "badge cordon" }, "⊘ cordoned"));
    for (const t of n.taints || []) out.push(mk("span", { class: "badge taint" }, `⚠ ${t.key}:${t.effect}`));
    return out;
  }

  function markButton(p, nominated) {
    const cls = nominated ? "mark nominated" : p.assumed ? "mark assumed" : "mark bound";
    const word = nominated ? "nominated " : p.assumed ? "binding " : "";
    return mk("li", { "data-map-pod": p.pod },
      mk("button", { type: "button", class: cls, "data-pod": p.pod, "data-key": `pod:${p.pod}:${nominated ? "n" : "b"}`,
        title: `${word}${p.pod}${p.group ? ` (pod group ${p.group})` : ""}: open its detail` },
      nominated ? "◇ " : p.assumed ? "◐ " : "● ", `${word}${p.pod}`, p.group ? mk("span", { class: "group" }, ` · group ${p.group}`) : null));
  }

  function tile(n) {
    const v = verdict(n.name);
    const cls = ["node"];
    if (v) cls.push(`v-${v.kind}`, v.shade !== undefined ? `shade-${v.shade}` : "");
    if (n.unschedulable) cls.push("cordoned");
    const pods = n.pods.slice(0, MARKS_PER_TILE).map((p) => markButton(p, false));
    const nominated = (n.nominated || []).map((p) => markButton(p, true));
    const more = n.pods.length - pods.length;
    return mk("article", { class: cls.join(" "), "data-node": n.name, "aria-label": `node ${n.name}` },
      mk("h4", {}, mk("button", { type: "button", class: "node-open", "data-node": n.name, "data-key": `node:${n.name}`,
        title: "Open the node's panel (Enter)" }, n.name)),
      v ? mk("p", { class: `verdict ${v.kind}` }, `${v.symbol} ${v.text}`) : null,
      ...badges(n).length ? [mk("p", { class: "badges" }, ...badges(n))] : [],
      bar("cpu", n.usage.cpu, "cpu"), bar("memory", n.usage.memory, "memory"), bar("pods", n.usage.pods, "pods"),
      ...(n.extended || []).map((e) => bar(e.name, e, "")),
      ...(n.devices || []).map((d) => bar(`${d.name} devices`, d, "")),
      volumes(n),
      pods.length || nominated.length ? mk("ul", { class: "marks" }, ...pods, ...nominated) : null,
      more > 0 ? mk("p", { class: "muted" }, `+${more} more (open the node)`) : null);
  }

  // volumes says what the node has of volumes: the claims its pods use
  // and each CSI driver's attach limit (nothing when it has neither).
  function volumes(n) {
    const limits = (n.attachLimits || []).map((l) => `${l.driver} attaches up to ${l.count}`);
    if (!n.claims && limits.length === 0) return null;
    return mk("p", { class: "volumes" }, [`volumes: ${n.claims || 0} claim${n.claims === 1 ? "" : "s"} in use`, ...limits].join(" · "));
  }

  function cell(n) {
    const v = verdict(n.name);
    const use = Math.max(fraction(n.usage.cpu), fraction(n.usage.memory), fraction(n.usage.pods));
    const cls = ["cell", `level-${Math.min(4, Math.floor(Math.min(use, 1) * 5))}`];
    if (v) cls.push(`v-${v.kind}`, v.shade !== undefined ? `shade-${v.shade}` : "");
    const flags = [n.unschedulable ? "cordoned" : "", n.taints?.length ? "tainted" : "",
      n.nominated?.length ? `${n.nominated.length} nominated` : ""].filter(Boolean);
    const label = `${n.name}: ${Math.round(use * 100)}% used, ${n.pods.length} pods` +
      (flags.length ? `, ${flags.join(", ")}` : "") + (v ? `; ${v.text}` : "");
    const symbol = v ? v.symbol : n.unschedulable ? "⊘" : n.taints?.length ? "!" : "";
    return mk("button", { type: "button", class: cls.join(" "), role: "listitem", "data-node": n.name,
      "data-key": `node:${n.name}`, title: label, "aria-label": label }, symbol);
  }

  // findNode looks a node up in what the page knows.
  function findNode(name) {
    for (const z of map.doc?.zones || []) {
      const n = (nodesOf(z) || []).find((x) => x.name === name);
      if (n) return n;
    }
    return null;
  }

  // renderNodePanel shows the open node in full: every pod, taint values.
  function renderNodePanel() {
    const panel = byId("cluster-node");
    const n = map.node && findNode(map.node);
    panel.hidden = !n;
    if (!n) return;
    const v = verdict(n.name);
    panel.replaceChildren(
      mk("div", { class: "detail-head" }, mk("h3", {}, `Node ${n.name}`),
        mk("button", { type: "button", class: "node-close", "data-key": "node-close", "aria-label": "Close the node's panel" }, "×")),
      v ? mk("p", { class: `verdict ${v.kind}` }, `${v.symbol} ${v.text}`) : null,
      mk("p", { class: "badges" }, ...badges(n), ...(n.taints || []).filter((t) => t.value).map((t) =>
        mk("span", { class: "muted" }, ` ${t.key}=${t.value}`))),
      bar("cpu", n.usage.cpu, "cpu"), bar("memory", n.usage.memory, "memory"), bar("pods", n.usage.pods, "pods"),
      ...(n.extended || []).map((e) => bar(e.name, e, "")),
      ...(n.devices || []).map((d) => bar(`${d.name} devices`, d, "")),
      volumes(n),
      mk("ul", { class: "marks" }, ...n.pods.map((p) => markButton(p, false)), ...(n.nominated || []).map((p) => markButton(p, true))));
  }

  function renderLegend() {
    const r = map.result;
    const legend = byId("cluster-result");
    byId("cluster-clear").hidden = !r;
    if (!r) {
      legend.textContent = "Choose a pod to colour the map by its last attempt.";
      return;
    }
    const parts = [`Coloured by ${r.pod}`];
    if (r.attempt) parts.push(`attempt ${r.attempt}${r.result ? ` (${r.result})` : ""}`);
    if (r.partial) parts.push("results still arriving");
    parts.push(`${Object.keys(r.filter || {}).length} refused`, `${Object.keys(r.scores || {}).length} passed`);
    if (r.chosen) parts.push(`★ chosen: ${r.chosen}`);
    if (r.nominated) parts.push(`◆ nominated: ${r.nominated}`);
    if (r.preFilter) parts.push(`✗ every node: PreFilter ${r.preFilter.plugin}: ${r.preFilter.reason}`);
    if (r.notEvaluated) parts.push(`${r.notEvaluated} not evaluated`);
    legend.textContent = parts.join(" · ");
  }

  // ---- Choosing ----

  async function showPod(pod) {
    const request = ++map.resultRequest;
    const slash = pod.indexOf("/");
    const url = `api/cluster/pods/${encodeURIComponent(pod.slice(0, slash))}/${encodeURIComponent(pod.slice(slash + 1))}`;
    try {
      const res = await fetch(url);
      if (request !== map.resultRequest) return;
      if (res.ok) show(await res.json());
      else show({ pod, filter: {}, scores: {}, chosen: "", nominated: "", partial: false, attempt: 0, result: "no attempt known" });
    } catch {
      // the stream's reconnection will bring the page back
    }
  }

  function show(result) {
    map.result = result;
    render();
  }

  function clear() {
    map.result = null;
    map.resultRequest++;
    render();
  }

  function onClick(event) {
    const button = event.target.closest("#cluster button");
    if (!button) return;
    if (button.matches(".zone-toggle")) {
      const name = button.dataset.zone;
      if (map.open.has(name)) map.open.delete(name);
      else {
        map.open.add(name);
        loadZone(name);
      }
      render();
    } else if (button.matches(".node-open, .cell")) {
      map.node = button.dataset.node;
      renderNodePanel();
      byId("cluster-node").querySelector(".node-close")?.focus();
    } else if (button.matches(".node-close")) {
      const name = map.node;
      map.node = "";
      renderNodePanel();
      byId("cluster").querySelector(`[data-key="${CSS.escape(`node:${name}`)}"]`)?.focus();
    } else if (button.matches(".mark") && typeof openDetail === "function") {
      map.opener = button.dataset.key;
      openDetail(button.dataset.pod, "cluster-zones"); // app.js
    } else if (button.id === "cluster-clear") {
      clear();
    }
  }

  // watchDetail colours the map by the pod whose detail the page opens
  // (from the queue lists, the timeline or the map), and gives the focus
  // back to the mark that opened it when the detail closes.
  function watchDetail() {
    const detail = byId("detail");
    const title = byId("detail-pod");
    if (!detail || !title) return;
    const observer = new MutationObserver(() => {
      if (!detail.hidden && title.textContent) showPod(title.textContent);
      if (detail.hidden && map.opener) {
        const key = map.opener;
        map.opener = "";
        byId("cluster").querySelector(`[data-key="${CSS.escape(key)}"]`)?.focus();
      }
    });
    observer.observe(detail, { attributes: true, attributeFilter: ["hidden"] });
    observer.observe(title, { childList: true, characterData: true, subtree: true });
  }

  function listen(source) {
    source.addEventListener("cluster", (e) => onDocument(JSON.parse(e.data)));
  }

  window.clusterMap = { show, clear, showPod, listen };
  document.addEventListener("click", onClick);
  watchDetail();
  load();
})();
