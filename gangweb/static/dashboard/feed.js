// The overview's activity feed: one line per preemption decision (kept up to date in place, linked to its
// decision view), the simulated cluster's lines said once with a count, a filter and a pause.
(function () {
  "use strict";
  const g = window.gangweb;
  const w = g.words;
  const { $, el } = g;
  const MAX_LINES = 60;

  const list = $("activity");
  const filter = $("activity-filter");
  const pause = $("activity-pause");
  const decisions = new Map(); // request id -> {li, podGroup, state, evicted: Set of pods, planned}
  const evictedPods = new Set(); // pods a decision evicted: the cluster's own "evicted" line is not said again
  let paused = false;
  let held = [];

  // A decision's line: "#12 team-a/train: evicted 2 of 2 pods, placed".
  function decisionText(d) {
    const parts = [];
    if (d.planned !== null) parts.push(d.planned ? `evicts ${w.plural(d.planned, "pod")}` : "evicts nobody");
    if (d.notice) parts.push(d.notice);
    if (d.evicted.size) parts.push(`evicted ${w.plural(d.evicted.size, "pod")}`);
    parts.push(w.feedState(d.state));
    return `${d.podGroup}: ${parts.join(", ")}`;
  }

  function onDecision(m) {
    const p = m.payload || {};
    const id = p.request;
    let d = decisions.get(id);
    if (!d) {
      d = { li: el("li", "decision"), podGroup: p.podGroup, state: "opened", evicted: new Set(), planned: null, notice: "" };
      d.li.dataset.kind = "decision";
      d.li.dataset.request = id;
      decisions.set(id, d);
    }
    if (m.type === "eviction") {
      if (p.state !== "evicted") return;
      d.evicted.add(p.pod);
      evictedPods.add(p.pod);
    } else if (m.type === "plan.created") {
      if (p.source && p.source !== "engine") return;
      d.planned = (p.evictions || []).length;
      if (!p.feasible) d.state = "infeasible";
    } else if (m.type === "gang.placed") {
      d.state = "placed";
    } else if (m.type === "notice.given") {
      // Preempt with notice (docs/design.md): the victims save, then go together by the deadline.
      d.notice = `notice to ${w.plural((p.units || []).length, "unit")} until ${g.clock(p.noticeDeadline)}`;
    } else if (m.type === "notice.withdrawn") {
      d.notice = `notice withdrawn, nobody evicted${p.reason ? ": " + p.reason : ""}`;
    } else if (p.state) {
      d.state = p.state;
    }
    d.li.replaceChildren(g.when(m.at), " ", g.requestLink(id), ` ${decisionText(d)}`);
    list.prepend(d.li); // the newest news first: a decision moves up when it changes
  }

  // The simulated cluster's lines; a victim's eviction and kube-scheduler's "Preempted" event are the
  // decision's, said on its line.
  function clusterText(m) {
    const p = m.payload || {};
    switch (m.type) {
      case "observed.preemption": return `kube-scheduler preempted for ${p.podGroup}`;
      case "cluster.gang-submitted": return `${p.podGroup} submitted (${w.plural(p.gpus, "GPU")}, ${p.priorityClass})`;
      case "cluster.gang-bound": return `${p.podGroup} bound`;
      case "cluster.pod-evicted": return evictedPods.has(p.pod) ? null : `${p.pod} evicted from ${p.node}`;
      case "cluster.gang-checkpointed": return `${p.podGroup} saved a checkpoint${p.onNotice ? " on notice" : ""}`;
      case "cluster.gang-restarted": return `${p.podGroup} restarted (attempt ${p.attempt})`;
      case "cluster.gang-abandoned": return `${p.podGroup} gave up waiting`;
      case "cluster.event": return p.reason === "Preempted" ? null : `${p.reason}: ${p.message}`;
      default: return null;
    }
  }

  function onCluster(m) {
    const text = clusterText(m);
    if (!text) return;
    // the same line again is counted on the line already there
    const same = [...list.children].find((li) => li.dataset.kind === "cluster" && li.dataset.text === text);
    if (same) {
      same.dataset.count = Number(same.dataset.count) + 1;
      same.replaceChildren(g.when(m.at), el("span", "", [" ", ...g.timesIn(text), ` (× ${same.dataset.count})`]));
      list.prepend(same);
      return;
    }
    const li = el("li", m.type.replace(/\W/g, "-"));
    li.dataset.kind = "cluster";
    li.dataset.text = text;
    li.dataset.count = 1;
    li.append(g.when(m.at), el("span", "", [" ", ...g.timesIn(text)]));  // a deadline in the reader's zone
    list.prepend(li);
  }

  function apply(m) {
    if ((m.payload || {}).request !== undefined && m.topic === "ledger") onDecision(m);
    else onCluster(m);
    while (list.children.length > MAX_LINES) {
      const last = list.lastChild;
      if (last.dataset.request) decisions.delete(Number(last.dataset.request));
      last.remove();
    }
    show();
  }

  function show() {
    const only = filter.value;
    for (const li of list.children) li.hidden = only !== "" && li.dataset.kind !== only;
  }

  function add(m) {
    if (paused) {
      held.push(m);
      pause.textContent = w.feedResume(held.length);
      return;
    }
    apply(m);
  }

  pause.addEventListener("click", () => {
    paused = !paused;
    pause.setAttribute("aria-pressed", String(paused));
    if (!paused) {
      const waiting = held;
      held = [];
      for (const m of waiting) apply(m);
    }
    pause.textContent = paused ? w.feedResume(held.length) : w.feedPause;
  });
  filter.addEventListener("change", show);
  pause.textContent = w.feedPause;

  window.gangwebFeed = { add };
})();
