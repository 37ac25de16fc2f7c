// /decisions/: admission decisions grouped, denials first with their reason, counts by source
// (GET /api/v1/decisions/groups/ and decisions/summary/).
(function () {
  "use strict";
  const g = window.gangweb;
  const { $, el } = g;

  const EMPTY = $("empty").textContent;

  async function load() {
    let d, sum;
    try {
      [d, sum] = await Promise.all([g.getJSON(g.urls.decisionGroups, { limit: 1000 }), g.getJSON(g.urls.decisionSummary)]);
    } catch (err) {
      $("decisions").replaceChildren();
      $("empty").textContent = `Cannot list the decisions: ${err.message}`;
      $("empty").hidden = false;
      return;
    }
    $("count").textContent = `${g.plural(sum.decisions, "decision")}, ${sum.denied} denied`;
    const src = $("sources");
    src.replaceChildren();
    for (const s of sum.bySource) src.append(el("li", "", `${s.source}: ${s.count}`));
    if (!sum.bySource.length) src.append(el("li", "empty", "no gang inferred yet"));
    const body = $("decisions");
    body.replaceChildren();
    for (const r of d.results) {
      const tr = el("tr", r.outcome);
      const cells = [
        ["Webhook", r.webhook], ["Outcome", r.outcome], ["Gang", r.podGroup || r.namespace],
        ["Reason", r.reason], ["Pods", `${r.count} (${r.pods.join(", ")}${r.count > r.pods.length ? ", …" : ""})`], ["Latest", [g.when(r.latest)]],
      ];
      for (const [label, text] of cells) {
        const td = el("td", label === "Outcome" ? `state ${r.outcome === "denied" ? "failed" : "succeeded"}` : "", text);
        td.dataset.label = label;
        tr.append(td);
      }
      body.append(tr);
    }
    $("empty").textContent = EMPTY;
    $("empty").hidden = d.results.length > 0;
  }
  load();
  let soon = null;
  g.live.subscribe(
    "decisions",
    () => {
      clearTimeout(soon);
      soon = setTimeout(load, 500);
    },
    { onResync: load },
  );
})();
