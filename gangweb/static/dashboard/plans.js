// What if? (gang page and what-if lab): POST /api/v1/simulate/ with every policy and their small maps,
// then the plans side by side, each with its victims, cost and map. Nothing is executed.
(function () {
  "use strict";
  const g = window.gangweb;
  const { el } = g;

  // simulate/ (or simulate/podgroups/) with the page's session and CSRF token; `form` a FormData.
  // A refusal throws an Error saying why; 401 (the demo lets anyone read, not plan) says to sign in.
  async function ask(url, form) {
    try {
      return await g.postForm(url, form);
    } catch (err) {
      if (err.status === 401) err.message = "What if? runs the engine: sign in to plan";
      throw err;
    }
  }

  function simulate(podGroup, snapshot) {
    const form = new FormData();
    form.set("podGroup", podGroup);
    form.set("policies", g.urls.whatIfPolicies);
    form.set("maps", "true");
    if (snapshot) form.set("snapshot", snapshot);
    return ask(g.urls.simulate, form);
  }

  function podGroups(snapshot) {
    const form = new FormData();
    if (snapshot) form.set("snapshot", snapshot);
    return ask(g.urls.simulatePodGroups, form);
  }

  function miniMap(nodes) {
    const box = el("div", "mini-map");
    box.setAttribute("role", "img");
    const victims = nodes.reduce((n, x) => n + x.squares.filter((s) => s.startsWith("victim")).length, 0);
    const placed = nodes.reduce((n, x) => n + x.squares.filter((s) => s.includes("placed")).length, 0);
    box.setAttribute("aria-label", `${g.plural(nodes.length, "node")}: ${g.plural(victims, "GPU")} freed by evictions, ${g.plural(placed, "GPU")} taken by the gang`);
    for (const node of nodes.slice(0, 48)) {
      const n = el("div", "mini-node");
      n.title = node.name;
      for (const s of node.squares) n.append(el("i", s));
      box.append(n);
    }
    return box;
  }

  // What the small maps' squares mean, once under the plans.
  function miniLegend() {
    const ul = el("ul", "legend mini-legend");
    ul.setAttribute("aria-label", "small maps' legend");
    for (const [cls, label] of Object.entries(g.words.miniSquares)) {
      const sw = el("span", "mini-node");
      sw.append(el("i", cls));
      ul.append(el("li", "", [sw, el("span", "", label)]));
    }
    return ul;
  }

  const hours = (p) => Number((p.cost.lostGpuSeconds / 3600).toFixed(1));

  function victimText(v) {
    // A victim of a namespace the reader does not see has no names (docs/design.md "Scope").
    const who = v.name ? `${v.namespace}/${v.name}` : "a gang of another namespace";
    return `${who} · ${g.plural((v.pods || []).length, "pod")} · priority ${Number(v.priority).toLocaleString()}`;
  }

  function render(container, plans) {
    container.replaceChildren();
    const best = plans.find((p) => p.feasible);
    const legacy = plans.find((p) => p.policy === "legacy" && p.feasible);
    for (const p of plans) {
      const card = el("article", "card plan" + (p === best ? " best" : ""));
      card.dataset.policy = p.policy;
      card.append(el("h3", "", p.policy + (p === best ? " · chosen" : "")), el("div", "hint", p.about));
      if (!p.feasible) {
        card.append(el("p", "error", `not feasible: ${p.reason}`));
      } else {
        const facts = el("dl", "facts");
        const add = (k, v) => facts.append(el("dt", "", k), el("dd", "", v));
        add("outcome", p.victims.length ? p.summary : "fits without evicting anything");
        add("lost", g.plural(hours(p), "GPU-hour"));
        if (p.domain) add("domain", p.domain);
        if (p.optimality) add("optimality", [g.optimalityMark(p.optimality)]);
        add("placed", g.plural(Object.keys(p.placement).length, "pod"));
        card.append(facts);
        if (p.victims.length) {
          const ul = el("ul", "victims");
          for (const v of p.victims) ul.append(el("li", "", victimText(v)));
          card.append(ul);
        }
        if ((p.map || []).length) card.append(miniMap(p.map));
        if (p === best && legacy && legacy !== best && legacy.cost.lostGpuSeconds < best.cost.lostGpuSeconds) {
          card.append(el("p", "note legacy-note", g.words.legacyNote(g.plural(hours(best), "GPU-hour"), g.plural(hours(legacy), "GPU-hour"))));
        }
      }
      container.append(card);
    }
    if (plans.some((p) => (p.map || []).length)) container.append(miniLegend());
  }

  window.gangwebPlans = { render, simulate, podGroups };
})();
