// gangweb dashboard's words, used by every page: counts, state names and times said one way.
// A time is the browser's locale and zone; its <time> element carries the UTC one on hover.
(function () {
  "use strict";

  function plural(n, word, many) {
    return `${n} ${n === 1 ? word : many || word + "s"}`;
  }

  // A gang's state (v1's podgroups) and a request's (the ledger's), as a reader says them.
  const GANG_STATES = { "running-partly": "partly placed", pending: "waiting", short: "short of minCount", empty: "no pods yet", invalid: "unreadable" };
  function gangState(s) {
    return GANG_STATES[s] || state(s);
  }
  function state(s) {
    return String(s || "").replace(/_/g, " ");
  }

  const CLOCK = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
  const DAY_CLOCK = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
  const DAY = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" });

  function toDate(t) {
    return typeof t === "number" ? new Date(t * 1000) : new Date(t);
  }
  function sameDay(a, b) {
    return a.toDateString() === b.toDateString();
  }

  // "21:28" (or "09:28 PM", as the locale says), with the day when it is not today.
  function clock(t) {
    if (t === null || t === undefined || t === "") return "";
    const d = toDate(t);
    if (isNaN(d)) return "";
    return (sameDay(d, new Date()) ? CLOCK : DAY_CLOCK).format(d);
  }
  function utc(t) {
    const d = toDate(t);
    return isNaN(d) ? "" : `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
  }
  // A <time> element: the local clock, the UTC time on hover.
  function when(t) {
    const e = document.createElement("time");
    e.textContent = clock(t);
    if (e.textContent) {
      e.dateTime = toDate(t).toISOString();
      e.title = utc(t);
    }
    return e;
  }
  // Server text with a UTC time in it ("… until 2026-12-01 21:28:00 UTC"): the text's parts, each such time
  // a <time> element like every other.
  const UTC_TIME = /(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d)(?::\d\d(?:\.\d+)?)? ?(?:UTC|Z)/g;
  function timesIn(text) {
    const parts = [];
    let at = 0;
    for (const m of String(text || "").matchAll(UTC_TIME)) {
      parts.push(text.slice(at, m.index), when(`${m[1]}T${m[2]}:00Z`));
      at = m.index + m[0].length;
    }
    parts.push(String(text || "").slice(at));
    return parts.filter((p) => p !== "");
  }

  // A chart's time axis and legend (uPlot's `values` and `value`), in the same words as the rest.
  function axisTimes(u, seconds) {
    return seconds.map((s, i) => {
      const d = toDate(s);
      return i > 0 && sameDay(d, toDate(seconds[i - 1])) ? CLOCK.format(d) : `${DAY.format(d)} ${CLOCK.format(d)}`;
    });
  }

  window.gangwebWords = { plural, state, gangState, clock, utc, when, timesIn, axisTimes };

  // --- the decision view (/requests/<id>/) and what links to it --------------------------------------
  const W = window.gangwebWords;

  // A timeline step of a request, as a reader says it.
  const STEPS = { detected: "waiting gang detected", planned: "plan made", decided: "decided", evicting: "evictions started", evicted: "victims evicted", placed: "room made: the gang is placed" };
  W.step = (s) => STEPS[s] || state(s);

  // A tier: the priority class and its number ("batch (10)"), or the number alone.
  W.tier = (priorityClass, priority) => (priority === null || priority === undefined ? "unknown" : priorityClass ? `${priorityClass} (${Number(priority).toLocaleString()})` : `priority ${Number(priority).toLocaleString()}`);

  // How long something ran, in words ("3h 12m", "2 days 4h").
  W.span = (seconds) => {
    if (seconds === null || seconds === undefined) return "unknown";
    const s = Math.max(0, Math.round(seconds));
    if (s < 60) return plural(s, "second");
    const m = Math.floor(s / 60);
    if (m < 60) return plural(m, "minute");
    const h = Math.floor(m / 60);
    if (h < 48) return `${h}h ${m % 60}m`;
    return `${plural(Math.floor(h / 24), "day")} ${h % 24}h`;
  };

  // GPU-seconds as GPU-hours, one decimal ("1.5 GPU-hours", "1 GPU-hour").
  W.gpuHours = (seconds) => {
    if (seconds === null || seconds === undefined) return "unknown";
    const h = Math.round((seconds / 3600) * 10) / 10;
    return `${h.toLocaleString()} GPU-${h === 1 ? "hour" : "hours"}`;
  };

  // A victim unit: its name where the reader sees its namespace, else "a gang of another team".
  W.victimName = (v) => (v.otherNamespace || !v.namespace ? `a ${v.kind === "Pod" ? "pod" : "gang"} of another team` : `${v.namespace}/${v.name}`);

  // One victim in one line, for the approval dialog: tier, pods, GPUs, how long it ran, the work it loses.
  W.victimFacts = (v) => `${W.victimName(v)}: ${W.tier(v.priorityClass, v.priority)}, ${plural(v.podCount, "pod")}, ${plural(v.gpus, "GPU")}, ran ${W.span(v.runningSeconds)}, loses ${W.gpuHours(v.lostGpuSeconds)}`;

  // The rule that allowed a preemption, in one sentence.
  W.rule = (rule, victims) => {
    if (!victims.length) return rule.outcome === "fits" ? "Nothing had to be evicted: the gang fits as the cluster is." : "No victim was chosen.";
    const mine = W.tier(null, rule.preemptorPriority);
    const top = W.tier(null, rule.highestVictimPriority);
    const lower = rule.lowerPriorityOnly ? "every victim ranks lower, so gangweb may evict them" : "a victim does not rank lower";
    return `The gang's ${mine} is above its victims' highest, ${top}: ${lower}. Of the plans that place the whole gang, gangweb takes the one that breaks the fewest disruption budgets, then evicts the lowest priorities, then the fewest gangs and pods, then loses the least work.`;
  };
  // The rule in one line, for the approval dialog.
  W.ruleLine = (rule) => (rule.lowerPriorityOnly ? `Every victim ranks below the gang's ${W.tier(null, rule.preemptorPriority)}.` : rule.lowerPriorityOnly === false ? `A victim does not rank below the gang's ${W.tier(null, rule.preemptorPriority)}.` : "");
  W.optimality = (o) => (o === "proven" ? "proven the cheapest" : o ? `the heuristic's best (${String(o).replace(/^heuristic:/, "")})` : "not searched");

  // A place a plan was tried ("rack rack-1", "anywhere in the cluster").
  W.where = (a) => (a.domain ? `${a.topologyKey || "domain"} = ${a.domain}` : "anywhere in the cluster");

  // The activity feed: a decision's state on its line, and the pause button.
  const FEED_STATES = { opened: "request opened", planning: "planning", planned: "planned", executing: "evicting", succeeded: "room made", placed: "room made: placed", awaiting_approval: "waits for approval" };
  W.feedState = (s) => FEED_STATES[s] || state(s);
  W.feedPause = "Pause";
  W.feedResume = (n) => (n ? `Resume (${plural(n, "update")} held)` : "Resume");

  // A time still ahead of the browser's clock (a "next try" that has passed is no next try).
  W.ahead = (t) => !!t && toDate(t).getTime() > Date.now();

  // The cascade notice of a decision.
  W.cascadeBy = (c) => `Cascade: this gang had just been evicted by request #${c.request} (${c.otherNamespace || !c.namespace ? "a gang of another team" : `${c.namespace}/${c.name}`}) and at once evicted others.`;
  W.cascadeCaused = (list) => `Cascade: ${plural(list.length, "victim")} of this request at once evicted others: ${list.map((c) => `#${c.request} (${plural(c.evictedPods, "pod")})`).join(", ")}.`;
})();

// The node page's and the map's controls' words (node.js, map-controls.js).
(function () {
  "use strict";
  const w = window.gangwebWords;
  w.deviceKind = (d) => (d.mig ? `MIG ${d.mig[1]} of GPU ${d.mig[0]}` : d.dra ? "DRA device" : "GPU");
  w.nodeState = (n) => (n.cordoned ? "cordoned" : n.ready ? "ready" : "not ready");
  w.otherPods = (o) => `${w.plural(o.pods, "pod")} of other namespaces (${w.plural(o.gpus, "GPU")})`;
  w.noNode = (name) => `There is no node ${name} in the cluster now.`;
  w.mapMatches = (nodes, devices) => (nodes ? `${w.plural(nodes, "node")} match (${w.plural(devices, "GPU")})` : "nothing matches");
  w.clickNode = "click: the node's page";
  // A reader of some namespaces: which headline figures count the whole cluster, which only hers.
  w.figureScope = { cluster: "whole cluster", own: "your namespaces" };
  // What if?: the gangs offered, the small maps' legend, and why legacy can lose less.
  w.gangsToPlan = (waiting, running) =>
    waiting ? `${w.plural(waiting, "waiting gang")} to plan${running ? ` (${w.plural(running, "running gang")} not offered)` : ""}` : "no waiting gang in it to plan";
  w.notOffered = (key) => `${key} is not a waiting gang of this snapshot: pick one from the list`;
  w.miniSquares = { held: "held, stays", victim: "freed by an eviction", placed: "taken by the gang", "victim placed": "freed, then taken by the gang", free: "free" };
  w.legacyNote = (chosen, legacy) =>
    `${chosen} loses more GPU-hours than legacy (${legacy}): legacy evicts pods one by one, so the gangs it takes them from are left broken, holding GPUs they cannot use, which its figure does not count.`;
})();
