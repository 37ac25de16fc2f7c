// /requests/<id>/: one preemption request as a decision, from GET /api/v1/requests/{id}/ (its `decision`):
// who asked, whom it evicts (another team's victims without names), why it was allowed, what else was
// tried, the timeline and the ledger entries.
(function () {
  "use strict";
  const g = window.gangweb;
  const w = g.words;
  const { $, el } = g;
  const root = $("decision");
  const id = root.dataset.request;

  function rows(id, items, cells, emptyId, emptyText) {
    const body = $(id);
    body.replaceChildren();
    for (const item of items) {
      const tr = el("tr");
      for (const cell of cells(item)) tr.append(el("td", "", cell));
      body.append(tr);
    }
    if (emptyId) {
      $(emptyId).hidden = items.length > 0;
      $(emptyId).textContent = emptyText;
    }
  }

  function facts(id, pairs) {
    const dl = $(id);
    dl.replaceChildren();
    for (const [k, v] of pairs) dl.append(el("dt", "", k), el("dd", "", v));
  }

  function gangLink(namespace, name) {
    const a = el("a", "gang-link", `${namespace}/${name}`);
    a.href = g.gangUrl(namespace, name);
    return a;
  }

  async function load() {
    let r;
    try {
      r = await g.getJSON(g.urls.request.replace("ID", id));
    } catch (err) {
      if (err.status !== 404) throw err;
      $("missing").hidden = false;
      return;
    }
    for (const e of root.querySelectorAll("[data-found]")) e.hidden = false;
    const d = r.decision;
    const p = d.preemptor;
    $("state").textContent = w.state(r.state);
    $("state").className = `state ${r.state}`;
    $("preemptor-head").replaceChildren("for ", gangLink(p.namespace, p.name));
    facts("preemptor", [
      ["gang", [gangLink(p.namespace, p.name)]],
      ["tier", w.tier(p.priorityClass, p.priority)],
      ["mode", r.mode],
      ["now", p.state ? `${w.gangState(p.state)}${p.pods ? `, ${p.placedPods} of ${w.plural(p.pods, "pod")} placed` : ""}` : "not in the cluster now"],
      ...(r.decidedBy ? [["decided by", r.decidedBy.display]] : []),
    ]);
    const rule = d.rule;
    $("rule").textContent = w.rule(rule, d.victims);
    facts("rule-facts", [
      ["policy", `${rule.policy}${rule.optimality ? `, ${w.optimality(rule.optimality)}` : ""}`],
      ["budgets broken", w.plural(rule.pdbViolations, "pod")],
      ["gangweb's words", g.timesIn(rule.reason)],
    ]);
    rows(
      "victims",
      d.victims,
      (v) => [
        v.otherNamespace || !v.namespace ? w.victimName(v) : [gangLink(v.namespace, v.name)],
        w.tier(v.priorityClass, v.priority),
        String(v.podCount),
        String(v.gpus),
        w.span(v.runningSeconds),
        w.gpuHours(v.lostGpuSeconds),
        `${v.evictedPods} of ${v.podCount}`,
      ],
      "no-victims",
      "No victim: nothing was evicted.",
    );
    const tried = $("tried");
    tried.replaceChildren();
    for (const t of d.tried) {
      tried.append(el("li", "", [`plan ${t.plan} (${t.policy}${t.source === "engine" ? "" : `, ${t.source}`}) `, g.when(t.at), `: ${t.feasible ? "feasible" : "not feasible"}${t.reason ? " · " : ""}`, ...g.timesIn(t.reason)]));
    }
    rows(
      "alternatives",
      d.alternatives,
      (a) => [w.where(a), String(a.victimUnits), String(a.evictedPods), a.highestVictimPriority === null ? "none" : a.highestVictimPriority.toLocaleString(), w.gpuHours(a.lostGpuSeconds)],
      "no-alternatives",
      "No other placement of the whole gang was found cheaper to compare with.",
    );
    const n = d.native;
    $("native-panel").hidden = !n;
    if (n) {
      $("native-missing").hidden = n.state === "ok";
      $("native-missing").textContent = n.detail;
      const pg = n.podGroup;
      const attempts = Object.entries(pg.attempts).map(([result, count]) => `${count} ${result}`).join(", ");
      facts(
        "native",
        n.state !== "ok"
          ? []
          : [
              ["pod group preemption attempts", attempts || "none"],
              ["preemptions that chose victims", String(pg.preemptions)],
              ["victims chosen", String(pg.victims)],
              ["pod groups disrupted", String(pg.disruptions)],
              ["budgets broken", String(pg.pdbViolations)],
              ["evaluation, mean", pg.evaluationSecondsMean === null ? "none yet" : `${(pg.evaluationSecondsMean * 1000).toFixed(1)} ms`],
              ["pod preemption attempts", String(n.pod.attempts)],
              ["read", [g.when(new Date(n.readAt * 1000).toISOString())]],
            ],
      );
    }
    const c = d.cascade;
    const notes = [];
    if (c.causedBy) notes.push(w.cascadeBy(c.causedBy));
    if (c.caused.length) notes.push(w.cascadeCaused(c.caused));
    $("cascade").hidden = !notes.length;
    $("cascade").textContent = notes.join(" ");
    const timeline = $("timeline");
    timeline.replaceChildren();
    for (const s of d.timeline) timeline.append(el("li", "", [g.when(s.at), ` ${w.step(s.step)}`, ...(s.detail ? [": ", ...g.timesIn(s.detail)] : [])]));
    const ledger = $("ledger");
    ledger.replaceChildren();
    for (const e of d.ledger) ledger.append(el("li", "", [g.when(e.createdAt), " ", el("code", "", e.kind), " ", ...g.timesIn(e.message)]));
  }

  load();
  g.live.subscribe(
    "ledger",
    (m) => {
      if ((m.payload || {}).request === Number(id)) load();
    },
    { onResync: load },
  );
})();
