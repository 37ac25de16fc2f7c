// Overview: the GPU map, headline figures, the history chart, waiting gangs and the activity feed.
(function () {
  "use strict";
  const g = window.gangweb;
  const { $, el, plural } = g;

  const map = new GpuMap($("gpu-map"), { onView: showZoom });
  window.gangwebMap = map;
  let buffered = null; // deltas that arrive while the picture is being fetched again

  // --- the map and what is counted from it -----------------------------------------------------

  async function loadPicture() {
    buffered = buffered || [];
    map.setPicture(await GpuMap.fetchPicture(g.urls.map));
    performance.mark("map-picture-fetched");
    const picture = map.picture;
    g.live.setLast("map", picture.seq);
    const late = buffered.filter((m) => m.seq > picture.seq);
    buffered = null;
    late.forEach((m) => map.applyDelta(m.payload));
    $("map-note").textContent = picture.note || "";
    $("map-note").hidden = !picture.note;
    showFigures();
    renderLegend();
    return picture;
  }

  function onMap(message) {
    if (message.type === "map.reset") return loadPicture();
    if (buffered) return buffered.push(message);
    map.applyDelta(message.payload);
    if (message.payload.time) map.picture.time = message.payload.time;
    showFigures();
  }

  function counted() {
    let allocated = 0;
    let free = 0;
    for (let i = 0; i < map.nodes.length; i++) {
      for (let s = map.start[i]; s < map.start[i + 1]; s++) {
        if (map.owner[s] !== -1) allocated += 1;
        else if (!map.cordoned[i]) free += 1;
      }
    }
    const waiting = map.gangs.filter((r) => r.state === "waiting");
    const broken = map.gangs.filter((r) => r.broken);
    return { allocated, free, waiting, broken };
  }

  function showFigures() {
    const c = counted();
    $("fig-allocated").textContent = c.allocated.toLocaleString();
    $("fig-free").textContent = c.free.toLocaleString();
    $("fig-waiting").textContent = c.waiting.length;
    const gpus = c.waiting.reduce((n, r) => n + (r.minCount - r.placed) * r.podGpus, 0);
    $("fig-waiting-lbl").textContent = `${c.waiting.length === 1 ? "gang" : "gangs"} waiting · ${plural(gpus, "GPU")}`;
    $("fig-broken").textContent = c.broken.length;
    const held = c.broken.reduce((n, r) => n + r.broken.heldGpus, 0);
    $("fig-broken-lbl").textContent = `${c.broken.length === 1 ? "gang" : "gangs"} broken · ${plural(held, "GPU")} held`;
    $("map-time").replaceChildren(...(map.picture.time ? ["at ", g.when(map.picture.time)] : []));
    renderPending(c.waiting);
  }

  function renderPending(waiting) {
    const list = $("pending");
    list.replaceChildren();
    waiting.sort((a, b) => b.priority - a.priority || b.waitingSeconds - a.waitingSeconds);
    for (const row of waiting.slice(0, 12)) {
      const li = el("li");
      const a = el("a", "gang-link", row.key);
      a.href = g.gangUrl(row.namespace, row.name);
      const sw = el("span", "swatch");
      sw.style.background = g.gangColour(row, map.colourBy);
      li.append(sw, a, el("span", "meta", ` ${row.priorityClass} · waiting ${g.duration(row.waitingSeconds)}`));
      li.append(el("div", "reason", row.reason || ""));
      li.addEventListener("mouseenter", () => map.setHighlight(map.keyIndex.get(row.key), null));
      li.addEventListener("mouseleave", () => map.setHighlight(null, null));
      list.appendChild(li);
    }
    $("pending-empty").hidden = waiting.length > 0;
  }

  function renderLegend() {
    const legend = $("legend");
    legend.replaceChildren();
    const add = (colour, label, cls) => {
      const li = el("li");
      const sw = el("span", "swatch" + (cls ? " " + cls : ""));
      if (colour) sw.style.background = colour;
      li.append(sw, el("span", "", label));
      legend.appendChild(li);
    };
    if (map.colourBy === "tier") {
      for (const t of legendTiers()) add(g.gangColour({ tier: t.tier, shade: 1 }, "tier"), `${t.priorityClass} (${Number(t.priority).toLocaleString()})`);
    } else if (map.colourBy === "state") {
      for (const s of g.GANG_STATE_COLOURS) add(g.gangColour({ state: s, shade: 1 }, "state"), g.gangState(s));
    } else {
      const namespaces = [...new Set(map.gangs.filter((r) => r.namespace && !r.other).map((r) => r.namespace))].sort();
      for (const ns of namespaces) add(g.gangColour({ namespace: ns, shade: 1 }, "namespace"), ns);
    }
    add(null, "free", "free");
    add(null, "nominated", "nominated");
    add(null, "cordoned / not ready", "cordoned");
    add(null, "in use, other namespace", "other");
    add(null, "DRA device", "dra");
    add(null, "broken gang", "broken");
  }

  // The tiers the squares are coloured by: the picture's, or for a reader of some namespaces (whose picture
  // leaves out the cluster-wide tiers) those of the gangs she sees, each at the tier index its squares use.
  function legendTiers() {
    const tiers = map.picture.tiers || [];
    if (tiers.length) return tiers.map((t, tier) => ({ ...t, tier }));
    const seen = new Map();
    for (const r of map.gangs) if (r && !r.other && r.priorityClass !== undefined && !seen.has(r.tier)) seen.set(r.tier, { tier: r.tier, priorityClass: r.priorityClass || "(no priority class)", priority: r.priority || 0 });
    return [...seen.values()].sort((a, b) => a.tier - b.tier);
  }

  // A reader of some namespaces reads figures of two kinds: GPUs in use and free are the cluster's (her
  // squares are all drawn), the rest count her namespaces only. Each says which.
  if (document.body.dataset.allNamespaces === "false") {
    for (const fig of document.querySelectorAll(".figure[data-scope]")) {
      fig.append(el("div", `scope-tag ${fig.dataset.scope}`, g.words.figureScope[fig.dataset.scope]));
    }
  }

  // --- find, filter, zoom (map-view.js) -----------------------------------------------------------

  function find(zoomOnto) {
    const count = map.setSearch($("map-search").value, $("map-filter").value);
    $("map-matches").textContent = count ? g.words.mapMatches(count.nodes, count.devices) : "";
    if (zoomOnto && count && count.nodes) map.show(map.matchedNodes());
    showZoom();
  }
  function showZoom() {
    $("zoom-level").textContent = map.zoom > 1 ? `×${map.zoom.toFixed(1)}` : "";
  }
  $("map-search").addEventListener("input", () => find(false));
  $("map-filter").addEventListener("change", () => find(false));
  // Enter in the search zooms onto what it found (the form has no submit button to submit it).
  $("map-tools").addEventListener("submit", (e) => e.preventDefault());
  $("map-search").addEventListener("keydown", (e) => {
    if (e.key !== "Enter") return;
    e.preventDefault();
    find(true);
  });
  $("zoom-in").addEventListener("click", () => map.zoomBy(2));
  $("zoom-out").addEventListener("click", () => map.zoomBy(0.5));
  $("zoom-fit").addEventListener("click", () => map.fit());

  for (const button of document.querySelectorAll("[data-colour]")) {
    button.addEventListener("click", () => {
      for (const b of document.querySelectorAll("[data-colour]")) b.setAttribute("aria-pressed", String(b === button));
      map.setColourBy(button.dataset.colour);
      renderLegend();
      showFigures();
    });
  }

  // --- headline figures from the ledger, and the chart -------------------------------------------

  let chart = null;
  async function loadOverview() {
    const data = await g.getJSON(g.urls.overview);
    const figure = (id, p, span) => {
      $(id).textContent = p.preemptions;
      $(`${id}-lbl`).textContent = `${p.preemptions === 1 ? "preemption" : "preemptions"}, last ${span} · ${p.lostGpuHours} GPU-h lost`;
    };
    figure("fig-pre-hour", data.lastHour, "hour");
    figure("fig-pre-day", data.lastDay, "day");
    g.showApprovals(data.awaitingApproval);
    history = data.history;
    drawHistory();
    await loadIdle();
  }

  // The chart over the chosen range (the samples kept, cut in the page), and its CSV.
  let history = [];
  function drawHistory() {
    const range = Number($("chart-range").value) || 0;
    const since = range ? Date.now() / 1000 - range : -Infinity;
    const h = { t: [], allocated: [], idle: [], waiting: [] };
    for (const s of history) {
      if (Date.parse(s.at) / 1000 < since) continue;
      h.t.push(Date.parse(s.at) / 1000);
      h.allocated.push(s.allocatedGpus);
      h.idle.push(s.idleGpus);
      h.waiting.push(s.waitingGpus);
    }
    drawChart(h);
    g.csvLink($("chart-csv"), "gpus.csv", ["at (UTC)", "allocated GPUs", "idle GPUs", "waiting GPUs"], h.t.map((t, i) => [new Date(t * 1000).toISOString(), h.allocated[i], h.idle[i], h.waiting[i]]));
  }
  $("chart-range").addEventListener("change", drawHistory);

  // Idle GPU-hours of the last hour by cause (/api/v1/idle/, docs/idle.md), and whether GPU activity is read.
  const CAUSES = { freeWhileWaiting: "free while gangs wait", brokenGangs: "broken gangs", allocatedIdle: "allocated, idle", heldForUnplaced: "held for unplaced gangs" };
  async function loadIdle() {
    const idle = await g.getJSON(g.urls.idle);
    const hour = idle.lastHour;
    const total = Object.values(hour).reduce((n, v) => n + v, 0);
    const hours = (v) => (v < 10 ? v.toFixed(2) : v.toFixed(1));
    $("fig-idle").textContent = hours(total);
    const parts = Object.entries(CAUSES).filter(([k]) => hour[k] > 0).map(([k, words]) => `${hours(hour[k])} ${words}`);
    const source = idle.activity.state === "ok" ? "" : ` · GPU activity: ${idle.activity.state === "missing" ? "no source (set GANGWEB_PROMETHEUS_URL)" : idle.activity.state}`;
    const label = `idle GPU-h, last hour${parts.length ? ": " + parts.join(", ") : ""}${source}`;
    $("fig-idle-lbl").textContent = label;
    $("fig-idle-lbl").title = [label, idle.activity.detail].filter(Boolean).join("\n"); // shown cut to two lines
    await loadIdleHours();
  }

  // Idle GPU-hours per hour by cause over the chosen range (/api/v1/idle/gpu-hours/), and its CSV: an hour
  // without a sample is a gap and an empty cell, not 0 (nothing was measured then).
  let idleChart = null;
  async function loadIdleHours() {
    const range = $("idle-days").value;
    const answer = await g.getJSON(g.urls.idleGpuHours, range ? { days: range } : {});
    const keys = Object.keys(CAUSES);
    const data = g.hourly(answer.days, answer.points, keys, null);
    $("idle-empty").hidden = answer.points.length > 0;
    g.csvLink($("idle-csv"), `idle-gpu-hours-${answer.days}d.csv`, ["hour (UTC)", ...keys.map((k) => `GPU-hours ${CAUSES[k]}`)], data[0].map((t, i) => [new Date(t * 1000).toISOString(), ...keys.map((k, j) => data[j + 1][i])]));
    if (idleChart && idleChart.days === answer.days) return idleChart.setData(data);
    if (idleChart) idleChart.destroy();
    idleChart = null;
    $("idle-chart").replaceChildren();
    if (!answer.points.length || !window.uPlot) return;
    const box = $("idle-chart");
    const now = Date.now() / 1000;
    const hues = { freeWhileWaiting: 150, brokenGangs: 350, allocatedIdle: 45, heldForUnplaced: 265 };
    idleChart = new uPlot({ width: Math.max(240, box.clientWidth), height: 160, scales: { x: { time: true, range: () => [now - answer.days * 86400, now + 1800] }, y: { range: (u, min, max) => [0, Math.max(max, 0.1)] } }, axes: [{ values: g.words.axisTimes, space: 90 }, { label: "GPU-hours" }], hooks: g.chartHooks, series: [{ value: (u, t) => g.clock(t) }, ...keys.map((k) => ({ label: CAUSES[k], stroke: `hsl(${hues[k]} 60% 45%)`, width: 2, points: { show: true, size: 6, fill: `hsl(${hues[k]} 60% 45%)` } }))] }, data, box);
    idleChart.days = answer.days;
  }
  $("idle-days").addEventListener("change", loadIdleHours);

  function drawChart(h) {
    const box = $("chart");
    $("chart-empty").hidden = h.t.length > 0;
    const series = [h.t, h.allocated, h.idle, h.waiting];
    const width = Math.max(240, box.clientWidth);
    if (chart) {
      chart.setData(series);
      return;
    }
    if (!h.t.length || !window.uPlot) return;
    const text = getComputedStyle(document.documentElement).getPropertyValue("--muted").trim();
    chart = new uPlot(
      {
        width,
        height: 200,
        series: [
          { value: (u, t) => g.clock(t) },
          { label: "allocated", stroke: "hsl(205 70% 45%)", fill: "hsla(205 70% 45% / .15)", width: 2 },
          { label: "idle", stroke: "hsl(150 50% 40%)", width: 2 },
          { label: "waiting", stroke: "hsl(28 85% 50%)", width: 2, dash: [4, 3] },
        ],
        axes: [{ stroke: text, values: g.words.axisTimes }, { stroke: text, label: "GPUs" }],
        hooks: g.chartHooks,
        scales: { y: { range: (u, min, max) => [0, Math.max(max, 1)] } },
      },
      series,
      box,
    );
    new ResizeObserver(() => chart.setSize({ width: Math.max(240, box.clientWidth), height: 200 })).observe(box);
  }

  // --- activity: feed.js -------------------------------------------------------------------------

  const addActivity = (m) => window.gangwebFeed.add(m);

  let refreshSoon = null;
  function onLedger(m) {
    addActivity(m);
    if (!refreshSoon) refreshSoon = setTimeout(() => { refreshSoon = null; loadOverview(); }, 1000);
  }

  loadPicture().then((picture) => {
    g.live.subscribe("map", onMap, { after: picture.seq, onResync: () => loadPicture() });
  });
  g.live.subscribe("ledger", onLedger, { backfill: 30, onResync: loadOverview });
  g.live.subscribe("activity", addActivity, { backfill: 30 });
  loadOverview();
  setInterval(loadOverview, 30000);
})();
