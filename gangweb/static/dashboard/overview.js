// Overview: the GPU map, headline figures, the history chart, waiting gangs and the activity feed.
(function () {
  "use strict";
  const g = window.gangweb;
  const { $, el, plural } = g;
  const MAX_ACTIVITY = 60;

  const map = new GpuMap($("gpu-map"));
  window.gangwebMap = map;
  let buffered = null; // deltas that arrive while the picture is being fetched again

  // --- the map and what is counted from it -----------------------------------------------------

  async function loadPicture() {
    buffered = buffered || [];
    const picture = await g.getJSON(g.urls.map);
    performance.mark("map-picture-fetched");
    map.setPicture(picture);
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
      for (const t of map.picture.tiers || []) add(g.gangColour({ tier: map.picture.tiers.indexOf(t), shade: 1 }, "tier"), `${t.priorityClass} (${Number(t.priority).toLocaleString()})`);
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
    const h = { t: [], allocated: [], idle: [], waiting: [] };
    for (const s of data.history) {
      h.t.push(Date.parse(s.at) / 1000);
      h.allocated.push(s.allocatedGpus);
      h.idle.push(s.idleGpus);
      h.waiting.push(s.waitingGpus);
    }
    drawChart(h);
    await loadIdle();
  }

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
    $("fig-idle-lbl").textContent = `idle GPU-h, last hour${parts.length ? ": " + parts.join(", ") : ""}${source}`;
    $("fig-idle-lbl").title = idle.activity.detail || "";
  }

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

  // --- activity -----------------------------------------------------------------------------------

  function describe(m) {
    const p = m.payload || {};
    switch (m.type) {
      case "request.opened": return `${p.podGroup} waits: gangweb opened request #${p.request}`;
      case "plan.created": return `plan for ${p.podGroup}: ${p.reason || g.state(p.state)}`;
      case "eviction": return p.state === "evicted" ? `evicted ${p.pod} for ${p.podGroup}` : null;
      case "gang.placed": return `${p.podGroup} placed: its pods were bound`;
      case "notice.given": return `notice to ${(p.units || []).join(", ")} for ${p.podGroup}: evicted together by ${g.clock(p.noticeDeadline)} at the latest, sooner once each has saved`;
      case "notice.withdrawn": return `notice for ${p.podGroup} withdrawn, nobody evicted: ${p.reason}`;
      case "request.finished": return `request #${p.request} for ${p.podGroup} ${g.state(p.state)}${p.reason ? ": " + p.reason : ""}`;
      case "request.failed": return `request #${p.request} for ${p.podGroup} failed: ${p.reason}`;
      case "observed.preemption": return `kube-scheduler preempted for ${p.podGroup}`;
      case "cluster.gang-submitted": return `${p.podGroup} submitted (${plural(p.gpus, "GPU")}, ${p.priorityClass})`;
      case "cluster.gang-bound": return `${p.podGroup} bound`;
      case "cluster.pod-evicted": return `${p.pod} evicted from ${p.node}`;
      case "cluster.gang-checkpointed": return `${p.podGroup} saved a checkpoint${p.onNotice ? " on notice" : ""}`;
      case "cluster.gang-restarted": return `${p.podGroup} restarted (attempt ${p.attempt})`;
      case "cluster.gang-abandoned": return `${p.podGroup} gave up waiting`;
      case "cluster.event": return `${p.reason}: ${p.message}`;
      default: return null;
    }
  }

  function addActivity(m) {
    const text = describe(m);
    if (!text) return;
    const li = el("li", m.type.replace(/\W/g, "-"));
    li.append(g.when(m.at), el("span", "", " " + text));
    $("activity").prepend(li);
    while ($("activity").children.length > MAX_ACTIVITY) $("activity").lastChild.remove();
  }

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
