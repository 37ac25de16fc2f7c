// /decisions/: admission decisions grouped, denials first with their reason, counts by source.
(function () {
  "use strict";
  const g = window.gangweb;
  const { $, el } = g;

  async function load() {
    const d = await g.getJSON(g.urls.decisions);
    $("count").textContent = `${g.plural(d.count, "decision")}, ${d.denied} denied`;
    const src = $("sources");
    src.replaceChildren();
    for (const [name, n] of Object.entries(d.bySource)) src.append(el("li", "", `${name}: ${n}`));
    if (!Object.keys(d.bySource).length) src.append(el("li", "empty", "no gang inferred yet"));
    const body = $("decisions");
    body.replaceChildren();
    for (const r of d.results) {
      const tr = el("tr", r.outcome);
      const cells = [
        ["Webhook", r.webhook], ["Outcome", r.outcome], ["Gang", r.podGroup ? `${r.namespace}/${r.podGroup}` : r.namespace],
        ["Reason", r.reason], ["Pods", `${r.count} (${r.names.join(", ")}${r.count > r.names.length ? ", …" : ""})`], ["Latest", g.clock(r.latest)],
      ];
      for (const [label, text] of cells) {
        const td = el("td", label === "Outcome" ? `state ${r.outcome === "denied" ? "failed" : "succeeded"}` : "", text);
        td.dataset.label = label;
        tr.append(td);
      }
      body.append(tr);
    }
    $("empty").hidden = d.results.length > 0;
  }
  load();
  let soon = null;
  g.live.subscribe("decisions", () => {
    clearTimeout(soon);
    soon = setTimeout(load, 500);
  });
})();
