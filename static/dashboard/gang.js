// /gangs/<namespace>/<name>/: the gang now, its history (What if? is gang-whatif.js)
(function () {
  "use strict";
  const g = window.gangweb;
  const { $, el } = g;
  const root = $("gang");
  const namespace = root.dataset.namespace;
  const name = root.dataset.name;
  const url = g.urls.gang.replace("NS", encodeURIComponent(namespace)).replace("NAME", encodeURIComponent(name));

  function list(id, rows, text) {
    const ul = $(id);
    ul.replaceChildren();
    for (const r of rows) ul.append(el("li", "", text(r)));
    if (!rows.length) ul.append(el("li", "empty", "none"));
  }

  async function load() {
    const d = await g.getJSON(url);
    const r = d.gang;
    $("missing").hidden = !!r;
    $("state").textContent = r ? (r.state === "partial" ? "partly placed" : r.state) : "gone";
    $("state").className = `state ${r ? r.state : ""}`;
    const facts = $("facts");
    facts.replaceChildren();
    const add = (k, v) => facts.append(el("dt", "", k), el("dd", "", v));
    if (r) {
      add("priority", `${r.priorityClass} (${Number(r.priority).toLocaleString()})`);
      add("disruption", r.disruption);
      add("placed", `${r.placed} of ${g.plural(r.pods, "pod")} (min ${r.minCount}), ${g.plural(r.podGpus, "GPU")} each`);
      if (r.state !== "running") add("waiting", `${g.duration(r.waitingSeconds)}: ${r.reason}`);
      add("nodes", d.nodes.join(", ") || "none");
    }
    const v = d.verdict;
    add("gangweb", v ? `request #${v.request} ${v.state}${v.nextRetry ? `, next try ${g.clock(v.nextRetry)}` : ""}${v.reason ? ": " + v.reason : ""}` : "no request");
    const body = $("members");
    body.replaceChildren();
    for (const p of d.pods) {
      const tr = el("tr");
      tr.append(el("td", "", p.name), el("td", "", p.node || (p.nominatedNode ? `(nominated ${p.nominatedNode})` : "pending")), el("td", "", p.phase));
      body.append(tr);
    }
    list("conditions", d.conditions, (c) => `${c.type}=${c.status}${c.reason ? " (" + c.reason + ")" : ""}${c.message ? ": " + c.message : ""}`);
    list("as-preemptor", d.history.asPreemptor, (x) => `#${x.id} ${x.state} ${g.clock(x.createdAt)}${x.reason ? ": " + x.reason : ""}`);
    list("as-victim", d.history.asVictim, (x) => `${g.clock(x.at)} for ${x.by}: evicted ${g.plural(x.evicted, "pod")} of ${x.pods} (${g.plural(x.gpus, "GPU")}), request #${x.request} ${x.state}`);
    list("decisions", d.decisions, (x) => `${x.webhook} ${x.outcome} ×${x.count}${x.reason ? ": " + x.reason : ""}`);
    showApproval(d);
  }

  // Approve mode: an operator approves or rejects the waiting plan, after naming what it evicts.
  let waiting = null;
  function showApproval(d) {
    const v = d.verdict;
    waiting = v && v.mode === "approve" && ["planned", "awaiting_approval"].includes(v.state) ? v : null;
    $("approval").hidden = !waiting;
    if (!waiting) return;
    $("approval-text").textContent = `Request #${v.request}: ${v.reason}`;
    for (const id of ["approve", "reject"]) $(id).hidden = !d.canOperate;
  }
  async function act(action) {
    try {
      await g.postForm(g.urls.requestAction.replace("ID", waiting.request).replace("ACTION", action), new FormData());
    } catch (err) {
      $("approval-text").textContent = `${action} refused: ${err.message}`;
    }
    load();
  }
  // What the plan evicts, read from the API (names of namespaces the reader does not see are hidden).
  function evictionText(request) {
    const plan = (request.plans || []).filter((p) => p.feasible).pop();
    const rows = plan ? plan.podEvictions || [] : [];
    if (!rows.length) return `Request #${request.id} has no eviction planned.`;
    const gpus = rows.reduce((n, r) => n + (r.gpus || 0), 0);
    const named = rows.filter((r) => r.pod).map((r) => `${r.pod} on ${r.node} (${g.plural(r.gpus, "GPU")})`);
    const hidden = rows.length - named.length;
    const others = hidden ? `${named.length ? "; and " : ""}${g.plural(hidden, "pod")} of other namespaces` : "";
    return `Approving request #${request.id} evicts ${g.plural(rows.length, "pod")} (${g.plural(gpus, "GPU")}): ${named.join(", ")}${others}. Evictions cannot be undone.`;
  }
  $("approve").addEventListener("click", async () => {
    const request = await g.getJSON(g.urls.request.replace("ID", waiting.request));
    $("confirm-text").textContent = evictionText(request);
    $("confirm").showModal();
  });
  $("confirm").addEventListener("close", () => {
    if ($("confirm").returnValue === "ok") act("approve");
  });
  $("reject").addEventListener("click", () => act("reject"));

  load();
  let stale = false;
  g.live.subscribe("ledger", (m) => {
    if ((m.payload || {}).podGroup === `${namespace}/${name}`) load();
  });
  g.live.subscribe("map", () => (stale = true));
  setInterval(() => {
    if (stale) {
      stale = false;
      load();
    }
  }, 5000);
})();
