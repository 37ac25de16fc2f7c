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
