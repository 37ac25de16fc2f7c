// /gangs/: every PodGroup as /api/v1/podgroups/ serves it (state, the map's reason, gangweb's verdict);
// the filters are the API's parameters and live in the page's URL; 100 rows a page, "Show more" follows `next`.
(function () {
  "use strict";
  const g = window.gangweb;
  const { $, el } = g;
  const form = $("filters");
  const NAMES = new Set(Array.from(form.elements, (f) => f.name).filter(Boolean));
  let first = true;

  function cell(row, label, content) {
    const td = el("td");
    td.dataset.label = label;
    if (content instanceof Node) td.append(content);
    else td.textContent = content ?? "";
    row.append(td);
    return td;
  }

  function options(select, values) {
    const keep = select.value;
    while (select.options.length > 1) select.remove(1);
    for (const v of values) select.add(new Option(v, v));
    select.value = keep;
  }

  // The namespaces and priority classes the reader sees, from usage/ (one row per namespace and class), and
  // the queues (queues/; the filter is shown only where a queue manager has queues).
  async function loadOptions() {
    const [usage, queues] = await Promise.all([g.getJSON(g.urls.usage, { points: 0 }), g.getJSON(g.urls.queues, { limit: 1000 }).catch(() => ({ results: [] }))]);
    const seen = usage.rows.filter((r) => !r.otherNamespace);
    options($("f-namespace"), [...new Set(seen.map((r) => r.namespace))].sort());
    options($("f-class"), [...new Set(seen.map((r) => r.priorityClass))]);
    const names = queues.results.filter((q) => q.kind !== "LocalQueue" && q.kind !== "Cohort").map((q) => `${q.system}/${q.name}`);
    options($("f-queue"), names);
    $("f-queue").closest("label").hidden = names.length === 0;
  }

  function fromURL() {
    const all = g.urlToForm(form);
    return Object.fromEntries(Object.entries(all).filter(([k, v]) => NAMES.has(k) && v));
  }

  const PAGE = 100;
  let next = null; // v1's link to the page after the rows shown
  let shown = 0;

  function addRows(body, results) {
    for (const r of results) {
      const tr = el("tr");
      const a = el("a", "gang-link", r.podGroup);
      a.href = g.gangUrl(r.namespace, r.name);
      cell(tr, "Gang", a);
      cell(tr, "State", el("span", `state ${r.state}`, g.gangState(r.state)));
      cell(tr, "Priority", `${r.priorityClass || "(no priority class)"} (${Number(r.priority).toLocaleString()})`);
      cell(tr, "Queue", r.queue ? `${r.queue.system} ${r.queue.name}` : "");
      cell(tr, "Disruption", r.disruptionMode);
      cell(tr, "Placed / min", `${r.placedPods} / ${r.minCount} of ${g.plural(r.pods, "pod")}, ${g.plural(r.gpus, "GPU")}`);
      cell(tr, "Waiting", r.state === "running" ? "" : g.duration(r.waitingSeconds));
      // The map's reason says what the cluster lacks; a queue manager's wait (quota, a missing queue) it cannot know.
      const queued = r.blocker && ["quota", "configuration"].includes(r.blocker.code);
      const why = queued ? `${r.blocker.code}: ${r.blocker.reason}` : r.reason;
      cell(tr, "Why it waits", r.state === "running" ? "" : why).className = "reason-cell";
      cell(tr, "gangweb", g.verdictText(r.verdict, r.state)).className = "reason-cell";
      body.append(tr);
    }
  }

  function showCount(data) {
    shown = $("gangs").querySelector("tbody").children.length;
    next = data.next;
    $("count").textContent = g.plural(data.count, "gang") + (shown < data.count ? `, ${shown} shown` : "");
    $("more").hidden = !next;
    $("empty").textContent = "No gang matches.";
    $("empty").hidden = shown > 0;
  }

  function failed(err) {
    $("count").textContent = "";
    $("gangs").querySelector("tbody").replaceChildren();
    $("more").hidden = true;
    $("empty").textContent = `Cannot list the gangs: ${err.message}`;
    $("empty").hidden = false;
  }

  // The first rows for the filters (a refresh keeps as many rows as are shown, up to v1's 1,000).
  async function load(keep) {
    // First the URL's filters; the sort the form shows (its first choice) when the URL names none.
    const params = first ? { sort: form.elements.sort.value, ...fromURL() } : g.formToURL(form);
    const limit = keep ? Math.min(1000, Math.max(PAGE, Math.ceil(shown / PAGE) * PAGE)) : PAGE;
    let data;
    try {
      if (first) await loadOptions();
      data = await g.getJSON(g.urls.podgroups, { ...params, limit });
    } catch (err) {
      return failed(err);
    }
    if (first) g.urlToForm(form);
    first = false;
    const body = $("gangs").querySelector("tbody");
    body.replaceChildren();
    addRows(body, data.results);
    showCount(data);
  }

  // "Show more": the next page, as v1's ``next`` link names it (the same filters, the next offset).
  $("more").addEventListener("click", async () => {
    if (!next) return;
    const button = $("more");
    button.disabled = true;
    try {
      const data = await g.getJSON(next);
      addRows($("gangs").querySelector("tbody"), data.results);
      showCount(data);
    } catch (err) {
      failed(err);
    } finally {
      button.disabled = false;
    }
  });

  let soon = null;
  const later = () => {
    clearTimeout(soon);
    soon = setTimeout(() => load(false), 250);
  };
  form.addEventListener("input", later);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    load(false);
  });
  load(false);
  // The list follows the map and the ledger, at most every few seconds.
  let stale = false;
  const mark = () => (stale = true);
  g.live.subscribe("map", mark, { onResync: mark });
  g.live.subscribe("ledger", mark, { onResync: mark });
  setInterval(() => {
    if (stale) {
      stale = false;
      load(true);
    }
  }, 4000);
})();
