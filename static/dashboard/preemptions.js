// /preemptions/: the ledger grouped by gang, retries folded, executions first; lost GPU-hours per hour.
(function () {
  "use strict";
  const g = window.gangweb;
  const { $, el } = g;
  const form = $("filters");
  let first = true;
  let chart = null;

  function runText(run) {
    const times = run.count > 1 ? ` × ${run.count} since ${g.clock(run.since)}` : ` at ${g.clock(run.since)}`;
    if (run.executed && run.plan) return `${run.state}${times}: ${run.plan.summary}, ${run.plan.lostGpuHours} GPU-hours lost`;
    const since = run.count > 1 ? `, last ${g.clock(run.until)}` : "";
    return `${run.state}${times}${since}${run.reason ? ": " + run.reason : ""}`;
  }

  async function load() {
    const params = first ? g.urlToForm(form) : g.formToURL(form);
    first = false;
    const d = await g.getJSON(g.urls.preemptions, params);
    $("count").textContent = `${g.plural(d.count, "gang")}`;
    const box = $("cards");
    box.replaceChildren();
    for (const c of d.results) {
      const card = el("article", "card" + (c.executed ? " executed" : ""));
      card.dataset.key = c.key;
      card.dataset.state = c.state;
      const h = el("h3");
      const a = el("a", "gang-link", c.key);
      a.href = g.gangUrl(c.namespace, c.name);
      h.append(a);
      const next = c.nextRetry ? `, next try ${g.clock(c.nextRetry)}` : "";
      const summary = `${g.plural(c.requests, "request")}, ${c.executed} executed · now ${c.state}${next}`;
      card.append(h, el("div", "hint", summary));
      const runs = el("ol", "runs");
      for (const run of c.runs.slice(0, 8)) runs.append(el("li", run.executed ? "executed" : "", runText(run)));
      if (c.runs.length > 8) runs.append(el("li", "hint", `and ${g.plural(c.runs.length - 8, "earlier run")}`));
      card.append(runs);
      box.append(card);
    }
    $("empty").hidden = d.results.length > 0;
    drawLost(d.lostGpuHours);
  }

  function drawLost(h) {
    $("lost-empty").hidden = h.t.length > 0;
    const data = [h.t, h.lostGpuHours];
    if (chart) return chart.setData(data);
    if (!h.t.length || !window.uPlot) return;
    const box = $("lost-chart");
    const now = Date.now() / 1000;
    chart = new uPlot({ width: Math.max(240, box.clientWidth), height: 160, scales: { x: { time: true, range: () => [now - 2 * 86400, now + 1800] } }, series: [{}, { label: "GPU-hours lost", stroke: "hsl(350 70% 50%)", fill: "hsla(350 70% 50% / .2)", paths: uPlot.paths.bars({ size: [0.6] }) }] }, data, box);
  }

  let soon = null;
  form.addEventListener("input", () => {
    clearTimeout(soon);
    soon = setTimeout(load, 300);
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    load();
  });
  load();
  g.live.subscribe("ledger", () => {
    clearTimeout(soon);
    soon = setTimeout(load, 1000);
  });
})();
