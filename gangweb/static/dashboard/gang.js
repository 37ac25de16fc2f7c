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

  const canOperate = root.dataset.canOperate === "true";
  const OWN_CONDITION = "gangweb.io/Preemption"; // scheduler/cluster.py PREEMPTION_CONDITION
  // The server's word on whether the cluster has the gang: a gone one is not asked for (no 404).
  let present = root.dataset.present === "true";

  // Admission decisions alike counted together (as /decisions/ groups them): webhook and outcome, and
  // a denial's reason; denials first, else newest first.
  function grouped(decisions) {
    const groups = new Map();
    for (const d of decisions) {
      const reason = d.allowed ? "" : d.message;
      const key = `${d.webhook}\u0000${d.allowed}\u0000${reason}`;
      if (groups.has(key)) groups.get(key).count += 1;
      else groups.set(key, { webhook: d.webhook, outcome: d.allowed ? "allowed" : "denied", reason, count: 1 });
    }
    return [...groups.values()].sort((a, b) => (a.outcome === "denied" ? 0 : 1) - (b.outcome === "denied" ? 0 : 1));
  }

  // The PodGroup's conditions and its pods' (v1 lists each pod's), alike ones said once with a count.
  function folded(conditions) {
    const seen = new Map();
    for (const c of conditions) {
      const text = `${c.type}=${c.status}${c.reason ? " (" + c.reason + ")" : ""}${c.message ? ": " + c.message : ""}`;
      if (seen.has(text)) seen.get(text).count += 1;
      else seen.set(text, { text, count: 1 });
    }
    return [...seen.values()];
  }

  // The PodGroup as /api/v1/podgroups/{namespace}/{name}/ serves it; a gang no longer in the cluster
  // (a 404), or a lone GPU pod the map draws as a gang, keeps its requests (/api/v1/requests/) and its
  // history as a victim (/api/v1/evictions/?unit=).
  async function load() {
    let r = null;
    try {
      r = present ? await g.getJSON(url) : null;
    } catch (err) {
      if (err.status !== 404) throw err;
      present = false;
    }
    $("missing").hidden = !!r;
    // A gone gang has no members, conditions or plan to ask for: those panels are not shown.
    for (const e of root.querySelectorAll("[data-present-only]")) e.hidden = !r;
    // What if? plans a gang with pods to place: not a running one, not a gone one (as /what-if/ offers).
    $("whatif").hidden = !r || r.state === "running";
    $("state").textContent = r ? g.gangState(r.state) : "gone";
    $("state").className = `state ${r ? r.state : ""}`;
    const facts = $("facts");
    facts.replaceChildren();
    const add = (k, v) => facts.append(el("dt", "", k), el("dd", "", v));
    if (!r) {
      const key = `${namespace}/${name}`;
      const [requests, evicted] = await Promise.all([
        g.getJSON(g.urls.requests, { podgroup: key, limit: 50 }),
        g.getJSON(g.urls.evictions, { unit: key, limit: 50 }),
      ]);
      add("gangweb", requests.results.length ? `request #${requests.results[0].id} ${g.state(requests.results[0].state)}` : "no request");
      for (const id of ["members", "conditions", "decisions"]) $(id).replaceChildren();
      await preemptorList(requests.results);
      list("as-victim", evicted.results, (x) => [g.when(x.createdAt), ` ${x.pod} ${g.state(x.state)} (${g.plural(x.gpus, "GPU")}), request #${x.request}`]);
      showApproval(null);
      return;
    }
    drawTree(r.compositeTree);
    add("priority", `${r.priorityClass || "(no priority class)"} (${Number(r.priority).toLocaleString()})`);
    add("disruption", r.disruptionMode);
    const each = Math.max(0, ...r.members.map((m) => m.gpus));
    add("placed", `${r.placedPods} of ${g.plural(r.pods, "pod")} (min ${r.minCount}), ${g.plural(r.gpus, "GPU")}${r.pods > 1 ? ` (${each} each)` : ""}`);
    if (r.broken) add("broken", r.reason);
    else if (r.state !== "running") add("waiting", `${g.duration(r.waitingSeconds)}: ${r.reason}`);
    if (r.queue) add("queue", `${r.queue.system} ${r.queue.name}`);
    if (r.blocker) add("blocked by", `${r.blocker.code}: ${r.blocker.reason}`);
    add("nodes", r.nodes.join(", ") || "none");
    if (r.nominatedNodes.length) add("nominated", r.nominatedNodes.join(", "));
    const v = r.verdict;
    add("gangweb", v ? [`${r.state === "running" ? "" : "request "}${g.verdictText(v, r.state)} · `, g.requestLink(v.request, "why")] : "no request");
    // Preempt with notice: this gang's victims were told (as preemptor), or this gang was (as victim).
    const n = v && v.notice;
    if (n) add("notice", n.withdrawnAt ? `given to its victims, withdrawn at ${g.clock(n.withdrawnAt)}` : `given to its victims until ${g.clock(n.deadline)}; they are evicted together once each has saved`);
    if (r.noticeDeadline) add("notice", `gangweb preempts this gang at ${g.clock(r.noticeDeadline)} at the latest: save a checkpoint and set gangweb.io/last-checkpoint`);
    const body = $("members");
    body.replaceChildren();
    for (const p of r.members) {
      const tr = el("tr");
      tr.append(el("td", "", p.name), el("td", "", p.node || "pending"), el("td", "", p.deleting ? `${p.phase} (deleting)` : p.phase));
      body.append(tr);
    }
    // gangweb's own condition restates its request, which the verdict above says from the ledger (the
    // cluster's copy lags it: "Evicting" beside "succeeded"); the page says it once, from the ledger.
    const theirs = r.conditions.filter((c) => c.type !== OWN_CONDITION);
    list("conditions", folded(theirs), (c) => `${c.text}${c.count > 1 ? ` (× ${c.count})` : ""}`);
    await preemptorList(r.asPreemptor);
    // another namespace's request is not the reader's to open: its number only
    list("as-victim", r.preemptedBy, (x) => [g.when(x.at), ` for ${x.otherNamespace ? "a gang of another namespace" : `${x.namespace}/${x.name}`}: evicted ${g.plural(x.evictedPods, "pod")} of ${x.pods} (${g.plural(x.gpus, "GPU")}), request `, x.otherNamespace ? `#${x.request}` : g.requestLink(x.request), ` ${g.state(x.state)}`]);
    list("decisions", grouped(r.decisions), (x) => `${x.webhook} ${x.outcome} ×${x.count}${x.reason ? ": " + x.reason : ""}`);
    showApproval(v);
  }

  // The gang's requests, each executed one with the gangs it evicted: the API's preemption cards
  // (/api/v1/preemptions/) name them, and only where the reader sees their namespace.
  async function preemptorList(requests) {
    const victims = new Map();
    if (requests.some((x) => x.state === "succeeded" || x.state === "executing")) {
      const d = await g.getJSON(g.urls.preemptions, { namespace, gang: name, limit: 1000 });
      const card = d.results.find((c) => c.podGroup === `${namespace}/${name}`);
      for (const run of card ? card.runs : []) if (run.executed && run.plan) victims.set(run.firstRequest, run.plan);
    }
    const ul = $("as-preemptor");
    ul.replaceChildren();
    for (const x of requests) {
      const li = el("li", "", [g.requestLink(x.id), ` ${g.state(x.state)} `, g.when(x.createdAt), ...(x.reason ? [": ", ...g.timesIn(x.reason)] : [])]);
      if (x.traceId) li.append(" ", el("code", "trace", `trace ${x.traceId}`));
      if (victims.has(x.id)) li.append(" ", g.optimalityMark(victims.get(x.id).optimality), g.victimList(victims.get(x.id).victims));
      ul.append(li);
    }
    if (!requests.length) ul.append(el("li", "empty", "none"));
  }

  // The CompositePodGroup tree from the top ancestor down (podgroups/{ns}/{name}/ compositeTree): this gang
  // in bold, the victim unit marked; a PodGroup under the tree links to its own page.
  function drawTree(tree) {
    $("composite").hidden = !tree;
    const box = $("composite-tree");
    box.replaceChildren();
    if (!tree) return;
    const item = (n) => {
      const label = n.kind === "PodGroup" && !n.gang ? el("a", "gang-link", n.name) : el(n.gang ? "strong" : "span", "", n.name);
      if (label.tagName === "A") label.href = g.gangUrl(namespace, n.name);
      const li = el("li", n.victimUnit ? "victim-unit" : "", [label, ` ${n.kind} · ${n.disruptionMode} · min ${n.minCount}`]);
      li.dataset.name = n.name;
      if (n.victimUnit) li.append(" ", el("span", "unit-mark", "victim unit"));
      if (n.children.length) {
        const ul = el("ul");
        for (const c of n.children) ul.append(item(c));
        li.append(ul);
      }
      return li;
    };
    box.append(item(tree));
  }

  // Approve mode: an operator approves or rejects the waiting plan, after naming what it evicts.
  let waiting = null;
  function showApproval(v) {
    waiting = v && v.mode === "approve" && ["planned", "awaiting_approval"].includes(v.state) ? v : null;
    $("approval").hidden = !waiting;
    if (!waiting) return;
    $("approval-text").replaceChildren(`Request #${v.request}: `, ...g.timesIn(v.reason));
    for (const id of ["approve", "reject"]) $(id).hidden = !canOperate;
  }
  async function act(action) {
    try {
      await g.postForm(g.urls.requestAction.replace("ID", waiting.request).replace("ACTION", action), new FormData());
    } catch (err) {
      $("approval-text").textContent = `${action} refused: ${err.message}`;
    }
    load();
  }
  // What the plan evicts, read from the request's decision (docs/design.md "Decision view"): each victim
  // with its tier, pods, GPUs, how long it ran and the work it loses; another team's without its name.
  function evictionText(request) {
    const victims = request.decision.victims;
    if (!victims.length) return `Request #${request.id} has no eviction planned.`;
    const pods = victims.reduce((n, v) => n + v.podCount, 0);
    const gpus = victims.reduce((n, v) => n + v.gpus, 0);
    const lost = victims.reduce((n, v) => n + (v.lostGpuSeconds || 0), 0);
    return `Approving request #${request.id} evicts ${g.plural(pods, "pod")} (${g.plural(gpus, "GPU")}, ${g.words.gpuHours(lost)} of work lost): ${victims.map(g.words.victimFacts).join("; ")}. ${g.words.ruleLine(request.decision.rule)} Evictions cannot be undone.`;
  }
  $("approve").addEventListener("click", async () => {
    const request = await g.getJSON(g.urls.request.replace("ID", waiting.request));
    $("confirm-text").textContent = evictionText(request);
    $("confirm-decision").href = g.requestUrl(request.id);
    $("confirm").showModal();
  });
  $("confirm").addEventListener("close", () => {
    if ($("confirm").returnValue === "ok") act("approve");
  });
  $("reject").addEventListener("click", () => act("reject"));

  load();
  let stale = false;
  g.live.subscribe(
    "ledger",
    (m) => {
      if ((m.payload || {}).podGroup === `${namespace}/${name}`) load();
    },
    { onResync: load },
  );
  g.live.subscribe("map", () => (stale = true), { onResync: () => (stale = true) });
  setInterval(() => {
    if (stale) {
      stale = false;
      load();
    }
  }, 5000);
})();
