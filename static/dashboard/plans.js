// Plans side by side (gang page and what-if lab): each policy's victims, cost and a small map.
(function () {
  "use strict";
  const g = window.gangweb;
  const { el } = g;

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

  function render(container, plans) {
    container.replaceChildren();
    const best = plans.find((p) => p.feasible);
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
        add("lost", `${p.lostGpuHours} GPU-hours`);
        if (p.domain) add("domain", p.domain);
        add("placed", g.plural(p.placedPods, "pod"));
        card.append(facts);
        if (p.victims.length) {
          const ul = el("ul", "victims");
          for (const v of p.victims) ul.append(el("li", "", `${v.unit} · ${g.plural(v.pods, "pod")} · priority ${Number(v.priority).toLocaleString()}`));
          card.append(ul);
        }
        if (p.map.length) card.append(miniMap(p.map));
      }
      container.append(card);
    }
  }

  window.gangwebPlans = { render };
})();
