// The GPU map's pointer and keyboard, mixed into GpuMap (map.js): the tooltip's words, hover lighting a
// gang, click opening the node's page (which links every gang on it), arrow keys walking the nodes. Loaded before map.js.
(function () {
  "use strict";
  const g = window.gangweb;
  const FREE = g.MAP_FREE;

  g.mapPointer = {
    describe(h) {
      const node = this.nodes[h.node] || null;
      if (!node) return "";
      const domain = this.picture.domains[node.domain].name;
      const lines = [`${node.name} · ${domain}${this.cordoned[h.node] ? " · cordoned" : ""}`];
      if (h.device === null) return lines.join("\n");
      const o = this.owner[h.slot];
      const m = this.mig[h.slot];
      const name = this.devName[h.slot];
      const what = m ? `MIG ${m[1]} of GPU ${m[0]}` : this.dra[h.slot] ? "DRA device" : "";
      const label = name ? `${name}${what ? ` (${what})` : ""}` : `GPU ${h.device}${what ? ` (${what})` : ""}`;
      if (o === FREE) {
        const n = this.nominated[h.slot];
        if (n !== FREE && this.gangs[n] && !this.gangs[n].other) lines.push(`${label}: free, nominated for ${this.gangs[n].key}`);
        else lines.push(`${label}: ${this.cordoned[h.node] ? "unusable (node cordoned or not ready)" : "free"}`);
      } else {
        const gang = this.gangs[o];
        if (!gang || gang.other) lines.push(`${label}: in use, other namespace`);
        else {
          lines.push(`${label}: ${gang.key}`);
          if (gang.priorityClass) lines.push(`${gang.priorityClass} (priority ${Number(gang.priority).toLocaleString()}) · ${g.plural(gang.gpus, "GPU")}`);
        }
      }
      lines.push(g.words.clickNode);
      return lines.join("\n");
    },

    hover(e) {
      const h = this.hit(e);
      const o = h && h.device !== null ? this.owner[h.slot] : FREE;
      const row = o !== FREE ? this.gangs[o] : null;
      this.setHighlight(row && !row.other ? o : null, h ? { text: this.describe(h), x: e.clientX, y: e.clientY } : null);
      this.canvas.style.cursor = h ? "pointer" : "default";
    },

    setHighlight(gang, tip) {
      const tooltip = document.getElementById("tooltip");
      if (tip && tip.text) {
        tooltip.textContent = tip.text;
        tooltip.hidden = false;
        const w = tooltip.offsetWidth;
        tooltip.style.left = `${Math.min(tip.x + 12, window.innerWidth - w - 8)}px`;
        tooltip.style.top = `${tip.y + 14}px`;
      } else tooltip.hidden = true;
      if (gang !== this.highlight) {
        this.highlight = gang;
        this.drawAll();
        if (this.options.onHighlight) this.options.onHighlight(gang === null ? null : this.gangs[gang]);
      }
    },

    click(e) {
      if (this.dragged) return; // the end of a pan, not a click
      const h = this.hit(e);
      if (!h) return;
      location.href = g.nodeUrl(this.nodes[h.node].name);
    },

    key(e) {
      if (!this.nodes || !this.nodes.length || !this.geom) return;
      const moves = { ArrowRight: 1, ArrowLeft: -1 };
      let i = this.focusNode < 0 ? 0 : this.focusNode;
      const b = this.geom.blocks[this.nodes[i].domain];
      if (moves[e.key]) i += moves[e.key];
      else if (e.key === "ArrowDown") i += b.perRow;
      else if (e.key === "ArrowUp") i -= b.perRow;
      else if (e.key === "Enter" && this.focusNode >= 0) {
        location.href = g.nodeUrl(this.nodes[i].name);
        return;
      } else return;
      e.preventDefault();
      const before = this.focusNode;
      this.focusNode = Math.max(0, Math.min(this.nodes.length - 1, i));
      if (before >= 0) this.drawNode(before);
      this.drawNode(this.focusNode);
      const held = [...this.owner.subarray(this.start[this.focusNode], this.start[this.focusNode + 1])];
      const summary = document.getElementById("map-summary");
      const free = held.filter((x) => x === FREE).length;
      summary.textContent = `${this.nodes[this.focusNode].name}: ${g.plural(free, "GPU")} free of ${held.length}`;
      this.canvas.setAttribute("aria-label", `GPU map. ${summary.textContent}`);
    },
  };
})();
