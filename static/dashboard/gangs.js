// /gangs/: every gang with its state, reason and gangweb's verdict; filters live in the URL.
(function () {
  "use strict";
  const g = window.gangweb;
  const { $, el } = g;
  const form = $("filters");
  let first = true;

  function cell(row, label, content) {
    const td = el("td");
    td.dataset.label = label;
    if (content instanceof Node) td.append(content);
    else td.textContent = content ?? "";
    row.append(td);
    return td;
  }

  function verdictText(v) {
    if (!v) return "no request";
    const next = v.nextRetry ? `, next try ${g.clock(v.nextRetry)}` : "";
    return `#${v.request} ${v.state}${next}${v.reason ? ": " + v.reason : ""}`;
  }

  function options(select, values) {
    const keep = select.value;
    while (select.options.length > 1) select.remove(1);
    for (const v of values) select.add(new Option(v, v));
    select.value = keep;
  }

  async function load() {
    const params = first ? g.urlToForm(form) : g.formToURL(form);
    const data = await g.getJSON(g.urls.gangs, params);
    options($("f-namespace"), data.namespaces);
    options($("f-class"), data.priorityClasses);
    if (first) g.urlToForm(form);
    first = false;
    $("count").textContent = g.plural(data.count, "gang");
    const body = $("gangs").querySelector("tbody");
    body.replaceChildren();
    for (const r of data.results) {
      const tr = el("tr");
      const a = el("a", "gang-link", r.key);
      a.href = g.gangUrl(r.namespace, r.name);
      cell(tr, "Gang", a);
      cell(tr, "State", el("span", `state ${r.state}`, r.state === "partial" ? "partly placed" : r.state));
      cell(tr, "Priority", `${r.priorityClass} (${Number(r.priority).toLocaleString()})`);
      cell(tr, "Disruption", r.disruption);
      cell(tr, "Placed / min", `${r.placed} / ${r.minCount} of ${g.plural(r.pods, "pod")} × ${g.plural(r.podGpus, "GPU")}`);
      cell(tr, "Waiting", r.state === "running" ? "" : g.duration(r.waitingSeconds));
      cell(tr, "Why it waits", r.reason || "").className = "reason-cell";
      cell(tr, "gangweb", verdictText(r.verdict)).className = "reason-cell";
      body.append(tr);
    }
    $("empty").hidden = data.results.length > 0;
  }

  let soon = null;
  const later = () => {
    clearTimeout(soon);
    soon = setTimeout(load, 250);
  };
  form.addEventListener("input", later);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    load();
  });
  load();
  // The list follows the map and the ledger, at most every few seconds.
  let stale = false;
  const mark = () => (stale = true);
  g.live.subscribe("map", mark);
  g.live.subscribe("ledger", mark);
  setInterval(() => {
    if (stale) {
      stale = false;
      load();
    }
  }, 4000);
})();
