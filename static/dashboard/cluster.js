// gangweb dashboard: draws the cluster.state picture and keeps it live over ws/cluster/.
// Plain DOM, no framework: squares are created once per node and only recoloured afterwards, so
// CSS transitions show what changed. Every string from the cluster goes through textContent.
(function () {
  "use strict";

  const TIER_HUES = [350, 28, 205, 150];
  const MAX_ACTIVITY = 60;
  const $ = (id) => document.getElementById(id);
  const nodeViews = new Map(); // node name -> {row, squares: [el]}
  const PLACED_GLOW_MS = 8000;
  const recentlyPlaced = new Map(); // podGroup -> until (ms), gangs gangweb just made room for
  let current = null;

  function tierColor(tier, shade) {
    const hue = TIER_HUES[tier % TIER_HUES.length];
    return `hsl(${hue} 72% ${40 + (shade || 0) * 5}%)`;
  }

  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function duration(seconds) {
    if (seconds < 60) return `${seconds}s`;
    const m = Math.floor(seconds / 60);
    return m < 60 ? `${m}m` : `${Math.floor(m / 60)}h ${m % 60}m`;
  }

  // --- drawing -------------------------------------------------------------------------------

  function render(state) {
    current = state;
    $("cluster-name").textContent = `${state.cluster} cluster`;
    $("clock").textContent = (state.time || "").replace("T", " ").replace("Z", " UTC");
    const t = state.totals || {};
    $("stat-allocated").textContent = t.allocatedGpus ?? "–";
    $("stat-free").textContent = t.freeGpus ?? "–";
    $("stat-running").textContent = t.runningGangs ?? "–";
    $("stat-pending").textContent = t.pendingGangs ?? "–";
    $("stat-pending-gpus").textContent = t.pendingGpus ?? "–";
    $("note").textContent = state.note || "";
    $("note").hidden = !state.note;
    renderUsage(state);
    renderRacks(state);
    renderPending(state);
  }

  function renderUsage(state) {
    const bar = $("usage-bar");
    const legend = $("legend");
    const total = (state.totals && state.totals.gpus) || 1;
    bar.replaceChildren();
    legend.replaceChildren();
    (state.tiers || []).forEach((tier, i) => {
      const seg = el("span");
      seg.style.width = `${(100 * tier.allocatedGpus) / total}%`;
      seg.style.background = tierColor(i, 1);
      seg.title = `${tier.priorityClass}: ${tier.allocatedGpus} GPUs`;
      bar.appendChild(seg);
      const li = el("li");
      const sw = el("span", "swatch");
      sw.style.background = tierColor(i, 1);
      const detail = [tier.priority.toLocaleString(), tier.disruption].filter(Boolean).join(", ");
      li.append(sw, el("span", "", `${tier.priorityClass} (${detail})`), el("b", "", String(tier.allocatedGpus)));
      legend.appendChild(li);
    });
    const free = el("li");
    const sw = el("span", "swatch");
    sw.style.background = "var(--free)";
    free.append(sw, el("span", "", "free"), el("b", "", String((state.totals || {}).freeGpus ?? 0)));
    legend.appendChild(free);
  }

  function renderRacks(state) {
    const container = $("racks");
    const seen = new Set();
    for (const rack of state.racks || []) {
      let card = container.querySelector(`[data-rack="${CSS.escape(rack.name)}"]`);
      if (!card) {
        card = el("article", "rack");
        card.dataset.rack = rack.name;
        const head = el("header");
        head.append(el("span", "rname", rack.name), el("span", "rmeta"));
        card.appendChild(head);
        container.appendChild(card);
      }
      let used = 0, total = 0;
      for (const node of rack.nodes) {
        seen.add(node.name);
        const view = nodeView(card, node);
        view.row.classList.toggle("notready", !node.ready);
        node.gpus.forEach((owner, i) => {
          total += 1;
          if (owner !== null && owner !== undefined) used += 1;
          paintSquare(view.squares[i], owner === null || owner === undefined ? null : state.gangs[owner], node.name, i);
        });
      }
      card.querySelector(".rmeta").textContent = `${rack.zone} · ${used}/${total} GPUs`;
    }
    for (const [name, view] of nodeViews) {
      if (!seen.has(name)) { view.row.remove(); nodeViews.delete(name); }
    }
  }

  function nodeView(card, node) {
    let view = nodeViews.get(node.name);
    if (view) return view;
    const row = el("div", "node");
    const label = el("span", "nname", node.name.replace(/^gpu-/, ""));
    label.title = node.name;
    const gpus = el("div", "gpus");
    const squares = node.gpus.map((_, i) => {
      const sq = el("span", "gpu");
      sq.dataset.node = node.name;
      sq.dataset.index = String(i);
      gpus.appendChild(sq);
      return sq;
    });
    row.append(label, gpus);
    card.appendChild(row);
    view = { row, squares };
    nodeViews.set(node.name, view);
    return view;
  }

  function paintSquare(sq, gang, nodeName, index) {
    const owner = gang ? gang.podGroup : "";
    sq.classList.toggle("placed", Boolean(gang) && (recentlyPlaced.get(owner) || 0) > Date.now());
    if (sq.dataset.pg === owner && sq.dataset.painted) return;
    const changed = sq.dataset.painted && sq.dataset.pg !== owner;
    sq.dataset.pg = owner;
    sq.dataset.painted = "1";
    sq.classList.remove("evicted");
    sq.classList.toggle("busy", Boolean(gang));
    sq.style.backgroundColor = gang ? tierColor(gang.tier, gang.shade) : "";
    sq.setAttribute("aria-label", gang ? `${nodeName} GPU ${index}: ${owner}` : `${nodeName} GPU ${index}: free`);
    if (changed) {
      sq.classList.remove("flash");
      void sq.offsetWidth; // restart the animation
      sq.classList.add("flash");
    }
  }

  function renderPending(state) {
    const list = $("pending");
    list.replaceChildren();
    for (const row of state.pending || []) {
      const gang = state.gangs[row.gang];
      const li = el("li");
      li.style.setProperty("--tier", tierColor(gang.tier, 1));
      // One little group per pod, one dashed square per GPU it waits for.
      const need = el("div", "need");
      need.title = `${gang.gpus} GPUs needed`;
      for (let p = 0; p < Math.min(gang.pods, 32); p++) {
        const pod = el("span", "pod");
        for (let g = 0; g < gang.podGpus; g++) pod.appendChild(el("i"));
        need.appendChild(pod);
      }
      const shape = `${gang.pods} × ${gang.podGpus} GPU${gang.podGpus > 1 ? "s" : ""}`;
      const extras = [gang.priorityClass, gang.disruption === "all" ? "all-or-nothing" : "per pod"];
      if (gang.topology) extras.push("one rack");
      li.append(
        el("div", "pg", gang.podGroup),
        el("div", "meta", `${shape} · ${extras.join(" · ")} · waiting ${duration(row.waitingSeconds)}`),
        need,
        el("div", "why", row.reason || ""),
      );
      list.appendChild(li);
    }
    $("pending-empty").hidden = (state.pending || []).length > 0;
  }

  // --- activity feed ---------------------------------------------------------------------------

  const CHANGE_TEXT = {
    "gang-submitted": ["+", (c) => `${c.podGroup} submitted: ${c.gpus} GPUs, ${c.priorityClass}`],
    "gang-bound": ["▶", (c) => `${c.podGroup} placed`],
    "gang-finished": ["✓", (c) => `${c.podGroup} finished, ${c.gpus} GPUs freed`],
    "gang-abandoned": ["✗", (c) => `${c.podGroup} gave up waiting`],
    "gang-restarted": ["↻", (c) => `${c.podGroup} restarted (attempt ${c.attempt})`],
  };
  // The cluster's own echo of gangweb's actions (its evictions, its Kubernetes Events) is left out:
  // the pipeline's events below already tell that story, once and with the reason.
  const QUIET_CHANGES = new Set(["pod-evicted", "pod-deleted", "event"]);

  function logActivity(time, icon, text) {
    const list = $("activity");
    const li = el("li", "new");
    li.append(el("span", "t", time), el("span", "icon", icon), el("span", "", text));
    list.prepend(li);
    while (list.children.length > MAX_ACTIVITY) list.lastChild.remove();
  }

  function clockText(state) {
    return (state && state.time ? state.time.slice(11, 16) : new Date().toISOString().slice(11, 16));
  }

  function logChanges(state) {
    for (const change of state.changes || []) {
      if (QUIET_CHANGES.has(change.type)) continue;
      const [icon, text] = CHANGE_TEXT[change.type] || ["•", () => change.type];
      logActivity(clockText(state), icon, text(change));
    }
  }

  // What the preemption pipeline reports (scheduler/preemption/ledger.py); anything else is shown by name.
  const EVENT_TEXT = {
    "request.opened": ["?", (p) => `${p.podGroup} waits too long: gangweb looks for room`],
    "plan.created": ["▣", (p) => p.feasible
      ? `plan for ${p.podGroup}: evict ${(p.evictions || []).length} pods${p.domain ? ` in ${p.domain}` : ""}`
      : `no plan for ${p.podGroup}: ${p.reason}`],
    "eviction": ["⚡", (p) => `${p.pod} ${p.state}${p.node ? ` from ${p.node}` : ""} for ${p.podGroup}${p.state === "evicted" ? "" : ` (${p.code}: ${p.message})`}`],
    "gang.placed": ["★", (p) => `${p.podGroup}: room made, ${p.reason}`],
    "request.failed": ["✗", (p) => `${p.podGroup}: ${p.reason}`],
    "request.finished": ["•", (p) => `${p.podGroup}: ${p.state}, ${p.reason}`],
  };

  const QUIET_EVICTION_STATES = new Set(["planned", "dry_run_ok", "evicting"]);

  // Show gangweb's hand in the picture: victims' squares flash as they are evicted, and the gang it
  // made room for glows once it lands.
  function markOnPicture(message) {
    const p = message.payload || {};
    if (message.event === "gang.placed" && p.podGroup) {
      recentlyPlaced.set(p.podGroup, Date.now() + PLACED_GLOW_MS);
    } else if (message.event === "eviction" && p.state === "evicted" && p.node && current) {
      const view = nodeViews.get(p.node);
      const row = (current.racks || []).flatMap((r) => r.nodes).find((n) => n.name === p.node);
      const held = row && (row.pods || []).find((entry) => entry.pod === p.pod);
      if (view && held) held.gpus.forEach((i) => view.squares[i] && view.squares[i].classList.add("evicted"));
    }
  }

  // The admission webhook's decisions arrive batched, every 0.5 s (admission/recorder.py): each
  // denial and warning gets its own line, the pods put into PodGroups one line per batch.
  function logAdmissions(p) {
    const time = clockText(current);
    const decisions = p.decisions || [];
    for (const d of decisions) {
      const who = `${d.kind} ${d.namespace}/${d.name}`;
      if (!d.allowed) logActivity(time, "✗", `webhook denied ${who}: ${d.message}`);
      else if ((d.warnings || []).length) logActivity(time, "⚠", `webhook warned ${who}: ${d.warnings[0]}`);
    }
    const joined = decisions.filter((d) => d.allowed && d.podGroup);
    if (joined.length) {
      const groups = [...new Set(joined.map((d) => d.podGroup))];
      const shown = groups.slice(0, 3).join(", ") + (groups.length > 3 ? ", …" : "");
      const more = p.count > decisions.length ? ` (newest ${decisions.length} of ${p.count} decisions)` : "";
      logActivity(time, "⇢", `webhook put ${joined.length} ${joined.length === 1 ? "pod" : "pods"} into PodGroups: ${shown}${more}`);
    }
    if (p.dropped) logActivity(time, "◆", `${p.dropped} earlier admission decisions were not reported (event stream down)`);
  }

  function logOtherEvent(message) {
    markOnPicture(message);
    const p = message.payload || {};
    if (message.event === "admission.decisions") {
      logAdmissions(p);
      return;
    }
    if (message.event === "eviction" && QUIET_EVICTION_STATES.has(p.state)) return;  // steps, not outcomes
    const known = EVENT_TEXT[message.event];
    if (known) {
      logActivity(clockText(current), known[0], known[1](p));
      return;
    }
    const what = p.reason || p.message || p.podGroup || "";
    logActivity(clockText(current), "◆", what ? `${message.event}: ${what}` : message.event);
  }

  // --- tooltips: hover a GPU to see its gang and light up all of that gang's GPUs ----------------

  function setupHover() {
    const racks = $("racks");
    const tip = $("tooltip");
    let lit = "";
    racks.addEventListener("mouseover", (ev) => {
      const sq = ev.target.closest(".gpu");
      if (!sq) return;
      const owner = sq.dataset.pg;
      if (owner !== lit) {
        racks.querySelectorAll(".gpu.hl").forEach((e) => e.classList.remove("hl"));
        if (owner) racks.querySelectorAll(`.gpu[data-pg="${CSS.escape(owner)}"]`).forEach((e) => e.classList.add("hl"));
        racks.classList.toggle("dim", Boolean(owner));
        lit = owner;
      }
      const gang = current && current.gangs.find((g) => g.podGroup === owner);
      tip.replaceChildren();
      tip.append(el("b", "", owner || "free GPU"));
      if (gang) {
        tip.append(el("div", "", `${gang.priorityClass} (priority ${gang.priority.toLocaleString()})`));
        tip.append(el("div", "muted", `${gang.runningPods}/${gang.pods} pods × ${gang.podGpus} GPUs · ${gang.disruption === "all" ? "evicted as a whole" : "evicted pod by pod"}${gang.topology ? " · one rack" : ""}`));
      }
      tip.append(el("div", "muted", `${sq.dataset.node} · GPU ${sq.dataset.index}`));
      tip.hidden = false;
    });
    racks.addEventListener("mousemove", (ev) => {
      tip.style.left = `${Math.min(ev.clientX + 14, window.innerWidth - 330)}px`;
      tip.style.top = `${ev.clientY + 14}px`;
    });
    racks.addEventListener("mouseleave", () => {
      tip.hidden = true;
      racks.querySelectorAll(".gpu.hl").forEach((e) => e.classList.remove("hl"));
      racks.classList.remove("dim");
      lit = "";
    });
  }

  // --- websocket -----------------------------------------------------------------------------

  function setConn(state, label) {
    const conn = $("conn");
    conn.dataset.state = state;
    conn.querySelector(".label").textContent = label;
  }

  function connect(attempt) {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(`${scheme}://${location.host}/ws/cluster/`);
    ws.onopen = () => {
      attempt = 0;
      setConn("live", "live");
      document.dispatchEvent(new CustomEvent("gangweb:live"));
    };
    ws.onmessage = (ev) => {
      let message;
      try { message = JSON.parse(ev.data); } catch (e) { return; }
      // Other parts of the page (timeline.js) follow the same stream without a socket of their own.
      document.dispatchEvent(new CustomEvent("gangweb:message", { detail: message }));
      if (message.event === "cluster.state") {
        render(message.payload);
        logChanges(message.payload);
        window.gangwebUpdates = (window.gangwebUpdates || 0) + 1;
      } else {
        logOtherEvent(message);
      }
    };
    ws.onclose = (ev) => {
      if (ev.code === 4401) { setConn("offline", "sign in to watch"); return; }
      setConn("offline", "reconnecting…");
      const delay = Math.min(1000 * 2 ** attempt, 15000);
      setTimeout(() => connect(attempt + 1), delay);
    };
    socket = ws;
  }

  let socket = null;
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: "refresh" }));
  });

  const initial = JSON.parse($("initial-state").textContent);
  render(initial);
  setupHover();
  connect(0);
})();
