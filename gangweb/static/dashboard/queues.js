// /queues/: per system a tree of queues; per queue guaranteed/used/borrowed/lent per resource as bars,
// the system's own fairness figure beside gangweb's, and the pending gangs in order (GET /api/v1/queues/).
(function () {
  "use strict";
  const g = window.gangweb;
  const { $, el } = g;
  const UNITS = { gpu: "GPUs", cpu: "cores", memory: "GiB" };

  function shown(resource, value) {
    if (value === null || value === undefined) return "–";
    return resource === "memory" ? `${Math.round((value / 2 ** 30) * 10) / 10}` : `${Math.round(value * 1000) / 1000}`;
  }

  function bar(resource, f) {
    const top = Math.max(f.guaranteed, f.used, f.limit || 0, 1);
    const wrap = el("div", "queue-bar");
    wrap.setAttribute("role", "img");
    const words = `${resource}: used ${shown(resource, f.used)} of ${shown(resource, f.guaranteed)} guaranteed ${UNITS[resource]}, borrowed ${shown(resource, f.borrowed)}, lent ${shown(resource, f.lent)}`;
    wrap.setAttribute("aria-label", words);
    wrap.title = words;
    for (const [cls, value] of [["guaranteed", f.guaranteed], ["used", f.used - f.borrowed], ["borrowed", f.borrowed], ["lent", f.lent]]) {
      const part = el("span", `part ${cls}`);
      part.style.width = `${Math.max(0, (100 * value) / top)}%`;
      wrap.append(part);
    }
    return wrap;
  }

  function ownFigure(share) {
    return Object.entries(share)
      .filter(([k, v]) => k !== "gangweb" && v !== null && typeof v !== "object")
      .map(([k, v]) => `${k} ${v}`)
      .join(", ");
  }

  function depth(q, byName) {
    let d = 0;
    let parent = q.parent;
    while (parent && byName.has(parent) && d < 8) {
      d += 1;
      parent = byName.get(parent).parent;
    }
    return d;
  }

  async function load() {
    let body;
    try {
      body = await g.getJSON(g.urls.queues, { limit: 1000 });
    } catch (err) {
      $("empty").textContent = `Cannot list the queues: ${err.message}`;
      $("empty").hidden = false;
      return;
    }
    const queues = body.results;
    $("count").textContent = g.plural(queues.length, "queue");
    const systems = $("systems");
    systems.replaceChildren();
    for (const system of ["kueue", "volcano", "kai", "yunikorn"]) {
      const mine = queues.filter((q) => q.system === system);
      if (!mine.length) continue;
      const byName = new Map(mine.map((q) => [q.name, q]));
      const panel = el("section", "panel table-wrap");
      panel.append(el("h2", "", system));
      const table = el("table", "responsive");
      const head = el("tr");
      for (const h of ["Queue", "Resources", "System's figure", "gangweb", "Pending"]) {
        const th = el("th", "", h);
        th.scope = "col";
        head.append(th);
      }
      table.append(el("thead", "", [head]));
      const rows = el("tbody");
      for (const q of mine) {
        const tr = el("tr");
        const name = el("td", "", `${"  ".repeat(depth(q, byName))}${q.name} (${q.kind})`);
        name.dataset.label = "Queue";
        name.style.paddingLeft = `${0.5 + depth(q, byName)}em`;
        const res = el("td");
        res.dataset.label = "Resources";
        for (const [resource, f] of Object.entries(q.resources)) {
          res.append(el("div", "", [`${resource} ${shown(resource, f.used)}/${shown(resource, f.guaranteed)} `, bar(resource, f)]));
        }
        const own = el("td", "", ownFigure(q.share) || "–");
        own.dataset.label = "System's figure";
        const ours = el("td", "", q.share.gangweb === null ? "–" : String(q.share.gangweb));
        ours.dataset.label = "gangweb";
        const pending = el("td");
        pending.dataset.label = "Pending";
        const list = el("ol", "pending");
        for (const p of q.pending) {
          const [ns, pg] = p.podGroup.split("/");
          const link = el("a", "", p.podGroup);
          link.href = g.urls.gangPage.replace("NS", ns).replace("NAME", pg);
          list.append(el("li", "", [`${p.position ?? "–"}. `, link]));
        }
        pending.append(q.pending.length ? list : "–");
        tr.append(name, res, own, ours, pending);
        rows.append(tr);
      }
      table.append(rows);
      panel.append(table);
      systems.append(panel);
    }
    $("empty").hidden = queues.length > 0;
  }
  load();
  setInterval(load, 10000);
})();
