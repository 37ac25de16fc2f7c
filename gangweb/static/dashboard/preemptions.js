// /preemptions/: the ledger grouped by gang, retries folded, executions first; lost GPU-hours per hour.
// Both from the API v1 (preemptions/, preemptions/lost-gpu-hours/); the filters are its parameters.
(function () {
  "use strict";
  const g = window.gangweb;
  const { $, el } = g;
  const form = $("filters");
  const NAMES = new Set(Array.from(form.elements, (f) => f.name).filter(Boolean));
  const EMPTY = $("empty").textContent;
  let first = true;
  let chart = null;

  // Lost work estimated at planning against what the evictions really lost (once they did), and the
  // victims' notice, when they had one.
  function lostText(plan) {
    const estimated = plan.estimatedLostGpuHours ?? plan.lostGpuHours;
    const realised = plan.realisedLostGpuHours == null ? "" : ` (estimated; ${g.plural(plan.realisedLostGpuHours, "GPU-hour")} really lost)`;
    const notice = plan.noticeDeadline ? `; notice until ${g.clock(plan.noticeDeadline)}${plan.noticeWithdrawn ? " (withdrawn)" : ""}` : "";
    return `${g.plural(estimated, "GPU-hour")} lost${realised}${notice}`;
  }

  // A run in words, its times as <time> elements (UTC on hover).
  function runText(run) {
    const times = run.count > 1 ? [` × ${run.count} since `, g.when(run.since)] : [" at ", g.when(run.since)];
    if (run.executed && run.plan) return [g.state(run.state), ...times, `: ${run.plan.summary}, ${lostText(run.plan)} `, g.optimalityMark(run.plan.optimality)];
    const since = run.count > 1 ? [", last ", g.when(run.until)] : [];
    return [g.state(run.state), ...times, ...since, ...(run.reason ? [": ", ...g.timesIn(run.reason)] : [])];
  }

  function fail(err) {
    $("count").textContent = "";
    $("cards").replaceChildren();
    $("empty").textContent = `Cannot list the preemptions: ${err.message}`;
    $("empty").hidden = false;
  }

  async function load() {
    const params = first ? g.urlToForm(form) : g.formToURL(form);
    first = false;
    // `days` is the chart's range (lost-gpu-hours/), the others filter the cards (preemptions/)
    const query = Object.fromEntries(Object.entries(params).filter(([k, v]) => NAMES.has(k) && k !== "days" && v));
    const range = params.days ? { days: params.days } : {};
    let d, lost;
    try {
      [d, lost] = await Promise.all([g.getJSON(g.urls.preemptions, { ...query, limit: 1000 }), g.getJSON(g.urls.lostGpuHours, range)]);
    } catch (err) {
      return fail(err);
    }
    $("count").textContent = `${g.plural(d.count, "gang")}`;
    const box = $("cards");
    box.replaceChildren();
    for (const c of d.results) {
      const card = el("article", "card" + (c.executed ? " executed" : ""));
      card.dataset.key = c.podGroup;
      card.dataset.state = c.state;
      const h = el("h3");
      const a = el("a", "gang-link", c.podGroup);
      a.href = g.gangUrl(c.namespace, c.name);
      h.append(a);
      const next = g.words.ahead(c.retryAt) ? [", next try ", g.when(c.retryAt)] : [];
      const summary = [`${g.plural(c.requests, "request")}, ${c.executed} executed · now ${g.state(c.state)}`, ...next];
      card.append(h, el("div", "hint", summary));
      const runs = el("ol", "runs");
      for (const run of c.runs.slice(0, 8)) {
        const li = el("li", run.executed ? "executed" : "", runText(run));
        // each run opens the decision view of its latest request (/requests/<id>/)
        li.append(" ", g.requestLink(run.lastRequest, `decision #${run.lastRequest}`));
        if (run.executed && run.plan) li.append(g.victimList(run.plan.victims));
        runs.append(li);
      }
      if (c.runs.length > 8) runs.append(el("li", "hint", `and ${g.plural(c.runs.length - 8, "earlier run")}`));
      card.append(runs);
      box.append(card);
    }
    // Every run shown, one row each, as the cards list them (victims of other namespaces only counted).
    const rows = [];
    for (const c of d.results) {
      for (const run of c.runs) {
        const victims = run.plan ? run.plan.victims || [] : [];
        const named = victims.filter((v) => v !== "(other namespace)");
        rows.push([c.podGroup, run.firstRequest, run.lastRequest, run.count, run.state, run.since, run.until, run.executed ? "yes" : "no", run.plan ? run.plan.lostGpuHours : "", named.join(" "), victims.length - named.length, run.reason || ""]);
      }
    }
    const header = ["gang", "first request", "last request", "requests", "state", "since (UTC)", "until (UTC)", "executed", "lost GPU-hours", "victims", "victims of other namespaces", "reason"];
    g.csvLink($("runs-csv"), "preemptions.csv", header, rows);
    $("empty").textContent = EMPTY;
    $("empty").hidden = d.results.length > 0;
    drawLost(lost);
  }

  function drawLost(lost) {
    $("lost-empty").hidden = lost.points.length > 0;
    $("lost-range").textContent = lost.days === 1 ? "day" : g.plural(lost.days, "day");
    const data = g.hourly(lost.days, lost.points, ["lostGpuHours"], 0); // one bar an hour wide, 0 where none
    g.csvLink($("lost-csv"), `lost-gpu-hours-${lost.days}d.csv`, ["hour (UTC)", "GPU-hours lost"], data[0].map((t, i) => [new Date(t * 1000).toISOString(), data[1][i]]));
    if (chart && chart.days === lost.days) return chart.setData(data);
    if (chart) chart.destroy();
    chart = null;
    $("lost-chart").replaceChildren();
    if (!lost.points.length || !window.uPlot) return;
    const box = $("lost-chart");
    const now = Date.now() / 1000;
    chart = new uPlot({ width: Math.max(240, box.clientWidth), height: 160, scales: { x: { time: true, range: () => [now - lost.days * 86400, now + 1800] } }, axes: [{ values: g.words.axisTimes }, {}], hooks: g.chartHooks, series: [{ value: (u, t) => g.clock(t) }, { label: "GPU-hours lost", stroke: "hsl(350 70% 50%)", fill: "hsla(350 70% 50% / .2)", paths: uPlot.paths.bars({ size: [0.6] }), points: { show: false } }] }, data, box);
    chart.days = lost.days;
  }

  let soon = null;
  // the range is the form's (form="filters") but outside it: its input does not bubble to the form
  for (const input of [form, $("lost-days")]) {
    input.addEventListener("input", () => {
      clearTimeout(soon);
      soon = setTimeout(load, 300);
    });
  }
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    load();
  });
  load();
  g.live.subscribe(
    "ledger",
    () => {
      clearTimeout(soon);
      soon = setTimeout(load, 1000);
    },
    { onResync: load },
  );
})();
