// /nodes/<name>/: one node from /api/v1/nodes/{name}/ (labels, taints, conditions, its pods, its squares),
// read again when the live map says the node changed (a map.delta naming its index) or was redrawn anew.
(function () {
  "use strict";
  const g = window.gangweb;
  const { $, el, words } = g;
  const name = $("node").dataset.name;
  const url = g.urls.node.replace("NAME", encodeURIComponent(name));

  function list(id, rows, text) {
    const ul = $(id);
    ul.replaceChildren(...rows.map((r) => el("li", "", text(r))));
    if (!rows.length) ul.append(el("li", "empty", "none"));
  }

  // A gang as a link to its page (a lone pod is its own gang, as on the map), or the words for a hidden one.
  function gangLink(holder) {
    if (!holder) return "free";
    if (holder.otherNamespace) return "in use, other namespace";
    const a = el("a", "gang-link", `${holder.namespace}/${holder.name}`);
    a.href = g.gangUrl(holder.namespace, holder.name);
    return a;
  }

  function cells(tr, values) {
    for (const v of values) tr.append(el("td", "", Array.isArray(v) ? v : [v]));
    return tr;
  }

  let index = null; // the node's place on the map: what map.delta entries name it by
  async function load() {
    let n;
    try {
      n = await g.getJSON(url);
    } catch (err) {
      if (err.status !== 404) throw err;
      index = null;
      $("missing").hidden = false;
      $("missing").textContent = words.noNode(name);
      return;
    }
    index = n.mapIndex;
    $("missing").hidden = true;
    $("state").textContent = words.nodeState(n);
    $("state").className = `state ${n.cordoned || !n.ready ? "broken" : "running"}`;
    const facts = $("facts");
    facts.replaceChildren();
    const add = (k, v) => facts.append(el("dt", "", k), el("dd", "", v));
    if (n.domain) add("rack or zone", n.domain + (n.zone && n.zone !== n.domain ? ` (zone ${n.zone})` : ""));
    const held = n.devices.filter((d) => d.heldBy).length;
    add("GPUs", `${held} in use of ${n.devices.length}`);
    for (const [k, v] of Object.entries(n.allocatable)) add(`allocatable ${k}`, v);
    list("conditions", n.conditions, (c) => `${c.type}=${c.status}${c.reason ? ` (${c.reason})` : ""}${c.message ? `: ${c.message}` : ""}`);
    list("taints", n.taints, (t) => `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`);

    const devices = $("devices");
    devices.replaceChildren();
    for (const d of n.devices) {
      const nominated = d.nominatedFor ? [" · nominated for ", gangLink(d.nominatedFor)] : [];
      devices.append(cells(el("tr"), [d.name || `GPU ${d.index}`, words.deviceKind(d), [gangLink(d.heldBy), ...nominated]]));
    }
    const pods = $("pods");
    pods.replaceChildren();
    for (const p of n.pods) {
      const gang = gangLink({ namespace: p.namespace, name: p.podGroup || p.name, otherNamespace: false });
      const priority = `${p.priorityClass || "(no priority class)"} (${Number(p.priority).toLocaleString()})`;
      pods.append(cells(el("tr"), [`${p.namespace}/${p.name}`, gang, p.deleting ? "terminating" : p.phase, priority, String(p.gpus), g.when(p.startedAt)]));
    }
    if (!n.pods.length) pods.append(cells(el("tr"), ["none", "", "", "", "", ""]));
    $("other-pods").hidden = !n.otherNamespaces.pods;
    $("other-pods").textContent = words.otherPods(n.otherNamespaces);

    const labels = $("labels");
    labels.replaceChildren();
    for (const [k, v] of Object.entries(n.labels).sort()) labels.append(el("dt", "", k), el("dd", "", v));
    list("slices", n.resourceSlices, (s) => `${s.name} (${s.driver || "?"}): ${s.devices.map((d) => d.name).join(", ")}`);
  }

  // One read at a time; changes meanwhile ask for one more after it.
  let reading = null;
  let again = false;
  function refresh() {
    if (reading) {
      again = true;
      return;
    }
    reading = load()
      .catch((err) => {
        $("missing").hidden = false;
        $("missing").textContent = err.message;
      })
      .finally(() => {
        reading = null;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  refresh();
  g.live.subscribe(
    "map",
    (m) => {
      if (m.type === "map.reset") return refresh();
      if (index !== null && ((m.payload || {}).nodes || []).some((entry) => entry[0] === index)) refresh();
    },
    { onResync: refresh },
  );
})();
