// gangweb dashboard, shared by every page: theme, formatting, JSON fetches and the live stream.
// Every string from the server goes through textContent, never innerHTML.
(function () {
  "use strict";

  const urls = JSON.parse(document.getElementById("data-urls").textContent);
  const $ = (id) => document.getElementById(id);

  // An element; its text a string, or a list of strings and elements (a <time> from words.when).
  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (Array.isArray(text)) e.append(...text.filter((x) => x !== null && x !== undefined && x !== ""));
    else if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  const words = window.gangwebWords;
  const { plural, clock } = words;

  function duration(seconds) {
    seconds = Math.max(0, Math.round(seconds));
    if (seconds < 60) return `${seconds}s`;
    const m = Math.floor(seconds / 60);
    return m < 60 ? `${m}m` : `${Math.floor(m / 60)}h ${m % 60}m`;
  }

  // gangweb's verdict on a gang (v1's `verdict`): "#12 infeasible, next try 08:29". Only a failed or
  // infeasible request is retried, and only a time still ahead is a next try. Why the gang waits is said
  // once, by the page's own "why it waits" (the request's words are on its decision view); a gang that
  // runs now is not called infeasible: its last request is history.
  function verdictText(v, gangState) {
    if (!v) return "no request";
    if (gangState === "running") return `last request #${v.request} ${words.state(v.state)}, running now`;
    const retried = v.state === "infeasible" || v.state === "failed";
    const next = retried && words.ahead(v.retryAt) ? `, next try ${clock(v.retryAt)}` : "";
    return `#${v.request} ${words.state(v.state)}${next}`;
  }

  // A plan's optimality (docs/design.md "gang plan"): "proven" when the exact search proved no cheaper
  // plan exists, else "heuristic:<why>"; a small mark, the why on hover. Nothing for plans without one.
  function optimalityMark(optimality) {
    if (!optimality) return "";
    const proven = optimality === "proven";
    const mark = el("span", "optimality " + (proven ? "proven" : "heuristic"), proven ? "proven cheapest" : "heuristic");
    mark.title = proven ? "no cheaper plan exists under gangweb's cost order" : `not proven cheapest: ${optimality.replace(/^heuristic:/, "")}`;
    return mark;
  }

  // The gangs a preemption evicted, named where the reader sees their namespace (the API names the
  // others "(other namespace)"; docs/design.md "Scope"): only how many of those.
  function victimList(victims) {
    const named = (victims || []).filter((v) => v !== "(other namespace)");
    const others = (victims || []).length - named.length;
    const ul = el("ul", "victims");
    for (const v of named) {
      const [namespace, name] = v.split("/");
      const a = el("a", "gang-link", v);
      a.href = gangUrl(namespace, name);
      ul.append(el("li", "", [a]));
    }
    if (others) ul.append(el("li", "hint", `${plural(others, "gang")} of other namespaces`));
    return ul;
  }

  // uPlot hooks: with no cursor on the chart, its legend says the latest values, not "--".
  function latest(u) {
    const n = u.data[0].length;
    if (n && u.cursor.idx == null) u.setLegend({ idx: n - 1 });
  }
  const chartHooks = { ready: [latest], setData: [latest], setCursor: [latest] };

  function csrf() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  async function getJSON(url, params) {
    const q = params ? "?" + new URLSearchParams(params).toString() : "";
    // No custom headers: a request the page preloads (the map's picture) must match to be reused.
    const answer = await fetch(url + q, { credentials: "include", mode: "cors" });
    if (!answer.ok) throw Object.assign(new Error(`${url}: HTTP ${answer.status}`), { status: answer.status });
    return answer.json();
  }

  async function postForm(url, form) {
    const answer = await fetch(url, {
      method: "POST",
      body: form,
      headers: { "X-CSRFToken": csrf(), Accept: "application/json" },
      credentials: "same-origin",
    });
    if (!answer.ok) throw await refusal(url, answer);
    return answer.json();
  }

  // An API v1 refusal (RFC 9457 problem+json) in one line: its detail, and each field's first message.
  async function refusal(url, answer) {
    let text = `${url}: HTTP ${answer.status}`;
    try {
      const p = await answer.json();
      const fields = Object.entries(p.errors || {}).map(([k, v]) => `${k}: ${[].concat(v)[0]}`);
      text = fields.length ? fields.join("; ") : p.detail || text;
    } catch (_) { /* not JSON: the status says it */ }
    const err = new Error(text);
    err.status = answer.status;
    return err;
  }

  // The decision view of a preemption request (/requests/<id>/).
  function requestUrl(id) {
    return urls.requestPage.replace("ID", encodeURIComponent(id));
  }
  function requestLink(id, text) {
    const a = el("a", "request-link", text || `#${id}`);
    a.href = requestUrl(id);
    return a;
  }

  function gangUrl(namespace, name) {
    return urls.gangPage.replace("NS", encodeURIComponent(namespace)).replace("NAME", encodeURIComponent(name));
  }

  // Every hour of the last `days` as uPlot's columns (the hours' starts, then one column per key) from an
  // API's hourly points ({at, <key>: ...}), which leave hours out: those get `missing` (0 where nothing
  // happened; null, a gap, where nothing was measured).
  function hourly(days, points, keys, missing) {
    const byHour = new Map(points.map((p) => [Math.floor(Date.parse(p.at) / 3600000), p]));
    const last = Math.floor(Date.now() / 3600000);
    const columns = [[], ...keys.map(() => [])];
    for (let h = last - days * 24 + 1; h <= last; h++) {
      columns[0].push(h * 3600);
      const point = byHour.get(h);
      keys.forEach((key, i) => columns[i + 1].push(point ? point[key] : missing));
    }
    return columns;
  }

  // A link that downloads `rows` (arrays) under `header` as CSV, made in the page from what it shows.
  function csvLink(a, filename, header, rows) {
    const cell = (v) => {
      const s = v === null || v === undefined ? "" : String(v);
      return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
    };
    const text = [header, ...rows].map((r) => r.map(cell).join(",")).join("\n") + "\n";
    if (a.href && a.href.startsWith("blob:")) URL.revokeObjectURL(a.href);
    a.href = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
    a.download = filename;
    a.hidden = !rows.length;
  }

  function nodeUrl(name) {
    return urls.nodePage.replace("NAME", encodeURIComponent(name));
  }

  // --- colours: hue per tier or per namespace, lightness per gang shade -----------------------------

  const TIER_HUES = [350, 28, 205, 150, 270, 55];
  function hashHue(text) {
    let h = 2166136261;
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
    return ((h >>> 0) % 360);
  }
  // Colouring by gang state: running, partly placed, broken (its squares hatched as in every colouring).
  const STATE_HUES = { running: 150, partial: 40, waiting: 270, broken: 0 };
  function gangColour(gang, by) {
    if (!gang || gang.other) return null;
    let hue;
    if (by === "namespace") hue = hashHue(gang.namespace || "");
    else if (by === "state") hue = STATE_HUES[gang.broken ? "broken" : gang.state] ?? STATE_HUES.running;
    else hue = TIER_HUES[(gang.tier || 0) % TIER_HUES.length];
    const dark = document.documentElement.dataset.resolvedTheme === "dark";
    const light = (dark ? 44 : 34) + (gang.shade || 0) * 5;
    return `hsl(${hue} 70% ${light}%)`;
  }

  // --- theme ------------------------------------------------------------------------------------

  const themeListeners = [];
  function resolveTheme() {
    const chosen = document.documentElement.dataset.theme;
    const dark = chosen ? chosen === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
    document.documentElement.dataset.resolvedTheme = dark ? "dark" : "light";
    themeListeners.forEach((f) => f());
  }
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", resolveTheme);
  resolveTheme();
  const toggle = $("theme-toggle");
  if (toggle) {
    toggle.addEventListener("click", () => {
      const next = document.documentElement.dataset.resolvedTheme === "dark" ? "light" : "dark";
      document.documentElement.dataset.theme = next;
      localStorage.setItem("gangweb-theme", next);
      resolveTheme();
    });
  }

  // --- the live stream ----------------------------------------------------------------------------
  // One socket per page. subscribe(topic, handler, {after, backfill, onResync}); the client keeps the
  // last sequence number applied per topic, drops what it has seen, and resumes from there on reconnect.
  // A topic's last is the server's number, or a sealed position (a string) the page sends back as it is.
  // The numbers belong to the server's epoch: resuming from another one (Redis came back empty), the
  // page is told to resync each topic, and onResync fetches its data again.

  const live = {
    socket: null,
    epoch: null, // of the numbers in topics' last, from the server's subscribed or resync
    topics: new Map(), // topic -> {last, handler, backfill, onResync}
    retry: 500,
    updates: 0,
    listeners: [], // [type, fn]: every delivered message of that type, after its topic's handler
    on(type, fn) {
      this.listeners.push([type, fn]);
    },
    subscribe(topic, handler, options) {
      const o = options || {};
      this.topics.set(topic, { last: o.after ?? null, handler, backfill: o.backfill || 0, onResync: o.onResync });
      if (this.socket && this.socket.readyState === 1) this.sendSubscribe([topic]);
    },
    setLast(topic, seq) {
      const t = this.topics.get(topic);
      if (t) t.last = seq;
    },
    sendSubscribe(names) {
      const topics = {};
      const backfill = {};
      for (const name of names) {
        const t = this.topics.get(name);
        topics[name] = t.last;
        if (t.last === null && t.backfill) backfill[name] = t.backfill;
      }
      this.socket.send(JSON.stringify({ type: "subscribe", epoch: this.epoch, topics, backfill }));
    },
    connect() {
      const scheme = location.protocol === "https:" ? "wss" : "ws";
      const socket = new WebSocket(`${scheme}://${location.host}${urls.live}`);
      this.socket = socket;
      setConn("connecting", "connecting…");
      socket.onopen = () => {
        this.retry = 500;
        setConn("live", "live");
        if (this.topics.size) this.sendSubscribe([...this.topics.keys()]);
      };
      socket.onmessage = (e) => this.receive(JSON.parse(e.data));
      socket.onclose = (e) => {
        if (e.code === 4401 || e.code === 4403) {
          setConn("closed", "signed out");
          return;
        }
        setConn("offline", "reconnecting…");
        setTimeout(() => this.connect(), this.retry);
        this.retry = Math.min(this.retry * 2, 10000);
      };
    },
    receive(message) {
      if (message.type === "batch") {
        for (const m of message.messages) this.receive(m);
        return;
      }
      if (message.type === "subscribed" || message.type === "pong") {
        if (message.epoch) this.epoch = message.epoch;
        for (const [name, seq] of Object.entries(message.topics || {})) {
          const t = this.topics.get(name);
          if (t && t.last === null) t.last = seq;
        }
        return;
      }
      const t = this.topics.get(message.topic);
      if (!t) return;
      if (message.type === "resync") {
        if (message.epoch) this.epoch = message.epoch;
        t.last = message.seq;
        if (t.onResync) t.onResync(message.seq);
        return;
      }
      if (!message.backfill) {
        // A number at or below the last is seen already; a sealed position (a string: readers who do not
        // see every namespace) is held as it is, the server sends each once and in order.
        if (typeof message.seq === "number" && typeof t.last === "number" && message.seq <= t.last) return;
        t.last = message.seq;
      }
      this.updates += 1;
      window.gangwebUpdates = this.updates;
      t.handler(message);
      for (const [type, fn] of this.listeners) if (type === message.type) fn(message);
    },
  };

  function setConn(state, label) {
    const conn = $("conn");
    if (!conn) return;
    conn.dataset.state = state;
    conn.querySelector(".label").textContent = label;
  }

  // The header's waiting approvals, on every page.
  function showApprovals(list) {
    const a = $("approvals");
    if (!a) return;
    a.hidden = !list.length;
    a.textContent = plural(list.length, "waiting approval");
  }

  // Filters in the URL: read them into a form, write the form back into the URL.
  function formToURL(form) {
    const params = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v) params.set(k, v);
    history.replaceState(null, "", params.toString() ? `?${params}` : location.pathname);
    return Object.fromEntries(params);
  }
  function urlToForm(form) {
    const params = new URLSearchParams(location.search);
    for (const field of form.elements) if (field.name && params.has(field.name)) field.value = params.get(field.name);
    return Object.fromEntries(params);
  }

  window.gangweb = {
    urls, $, el, plural, duration, clock, when: words.when, timesIn: words.timesIn, state: words.state, gangState: words.gangState,
    words, chartHooks, victimList, optimalityMark, verdictText, getJSON, postForm, csvLink, hourly, gangUrl, nodeUrl, requestUrl, requestLink, gangColour, GANG_STATE_COLOURS: Object.keys(STATE_HUES), live,
    showApprovals, formToURL, urlToForm, onTheme: (f) => themeListeners.push(f),
  };
  window.gangwebUpdates = 0;
  window.addEventListener("load", () => live.connect());
  // What gangweb cannot do on this cluster (GET /api/v1/'s kubernetes.limits, from discovery), above
  // every page; nothing when the cluster serves every workload kind.
  window.addEventListener("load", async () => {
    const banner = $("served-banner");
    if (!banner || !urls.api) return;
    try {
      const limits = ((await getJSON(urls.api)).kubernetes || {}).limits || [];
      banner.replaceChildren(...limits.map((text) => el("p", "", text)));
      banner.hidden = limits.length === 0;
    } catch (err) {
      banner.hidden = true; // the pages say themselves when the API does not answer
    }
  });
})();
