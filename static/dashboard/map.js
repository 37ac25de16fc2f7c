// The GPU map on one <canvas>: one square per device, nodes as small grids, grouped by topology domain.
// Built for 5,000 nodes x 8 GPUs: devices live in typed arrays, a full draw batches squares by colour,
// and a delta redraws only the nodes it names (inside one animation frame).
(function () {
  "use strict";
  const g = window.gangweb;

  const FREE = -1;
  const GAP = 1;

  function cssVar(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }

  class GpuMap {
    constructor(canvas, options) {
      this.canvas = canvas;
      this.ctx = canvas.getContext("2d", { alpha: false });
      this.options = options || {};
      this.colourBy = "tier";
      this.highlight = null; // gang index lit by hover
      this.focusNode = -1;
      this.pendingNodes = new Set();
      this.frameRequested = false;
      this.stats = { firstPaintMs: null, draws: 0, lastDrawMs: 0, lastUpdateMs: 0, longFrames: 0 };
      this.gangs = [];
      this.keyIndex = new Map();
      this.flash = new Map(); // node index -> until (ms): squares that just changed are outlined
      this.readColours();
      g.onTheme(() => {
        this.readColours();
        this.drawAll();
      });
      canvas.addEventListener("mousemove", (e) => this.hover(e));
      canvas.addEventListener("mouseleave", () => this.setHighlight(null, null));
      canvas.addEventListener("click", (e) => this.click(e));
      canvas.addEventListener("keydown", (e) => this.key(e));
      new ResizeObserver(() => this.resize()).observe(canvas.parentElement);
    }

    readColours() {
      this.colours = {
        bg: cssVar("--panel") || "#fff",
        free: cssVar("--free") || "#e5e7eb",
        other: cssVar("--other") || "#94a3b8",
        cordoned: cssVar("--cordoned") || "#7f1d1d",
        text: cssVar("--muted") || "#666",
        mark: cssVar("--text") || "#111",
      };
      this.gangColours = null;
    }

    // --- data ------------------------------------------------------------------------------------

    setPicture(picture) {
      this.picture = picture;
      this.gangs = picture.gangs.slice();
      this.keyIndex = new Map(this.gangs.map((row, i) => [row.key, i]));
      const nodes = picture.nodes;
      let total = 0;
      this.start = new Int32Array(nodes.length + 1);
      nodes.forEach((n, i) => {
        this.start[i] = total;
        total += n.gpus.length;
      });
      this.start[nodes.length] = total;
      this.owner = new Int32Array(total).fill(FREE);
      this.nominated = new Int32Array(total).fill(FREE);
      this.dra = new Uint8Array(total);
      this.cordoned = new Uint8Array(nodes.length);
      this.nodes = nodes.map((n) => ({ name: n.name, domain: n.domain }));
      nodes.forEach((n, i) => {
        const s = this.start[i];
        n.gpus.forEach((o, j) => (this.owner[s + j] = o === null ? FREE : o));
        (n.nominated || []).forEach((o, j) => (this.nominated[s + j] = o === null ? FREE : o));
        (n.dra || []).forEach((d, j) => (this.dra[s + j] = d ? 1 : 0));
        this.cordoned[i] = n.cordoned || !n.ready ? 1 : 0;
      });
      this.placeDevices(nodes, total);
      this.gangColours = null;
      this.layout();
      this.drawAll();
      if (this.stats.firstPaintMs === null) {
        this.stats.firstPaintMs = performance.now();
        performance.mark("map-first-paint");
      }
    }

    // Each device gets a cell of its node's grid; the MIG partitions of one GPU share its cell, drawn as
    // sub-squares. ``devName``/``mig`` keep what a DRA ResourceSlice says about each device.
    placeDevices(nodes, total) {
      this.cellOf = new Int16Array(total);
      this.partOf = new Uint8Array(total);
      this.partsOf = new Uint8Array(total).fill(1);
      this.devName = new Array(total).fill(null);
      this.mig = new Array(total).fill(null);
      this.maxCells = 1;
      this.anyMig = false; // without MIG a device's cell is its index: the full draw keeps its arithmetic
      nodes.forEach((n, i) => {
        const s0 = this.start[i];
        const parents = new Map(); // parent GPU index -> [cell, slots]
        let cells = 0;
        n.gpus.forEach((_, j) => {
          const s = s0 + j;
          this.devName[s] = (n.devices || [])[j] || null;
          const m = (n.mig || [])[j];
          if (m) {
            this.mig[s] = m;
            let group = parents.get(m[0]);
            if (!group) parents.set(m[0], (group = [cells++, []]));
            this.cellOf[s] = group[0];
            this.partOf[s] = group[1].length;
            group[1].push(s);
          } else this.cellOf[s] = cells++;
        });
        for (const [, slots] of parents.values()) for (const s of slots) this.partsOf[s] = slots.length;
        this.maxCells = Math.max(this.maxCells, cells);
        if (parents.size) this.anyMig = true;
      });
    }

    // Where device ``s`` of node ``i`` is drawn: its cell, or its part of the cell for a MIG partition.
    rect(i, s) {
      const c = this.cellOf[s];
      const cell = this.geom.cell;
      let x = this.nodeX[i] + 1 + (c % this.devCols) * cell;
      let y = this.nodeY[i] + 1 + ((c / this.devCols) | 0) * cell;
      let size = this.geom.size;
      const parts = this.partsOf[s];
      if (parts > 1) {
        const k = Math.ceil(Math.sqrt(parts));
        const sub = size / k;
        x += (this.partOf[s] % k) * sub;
        y += ((this.partOf[s] / k) | 0) * sub;
        size = Math.max(1, sub - (size >= 6 ? 1 : 0));
      }
      // One array reused, not one per device: a full draw asks 40,000 times at 5,000 nodes.
      const r = this.scratch || (this.scratch = [0, 0, 0]);
      r[0] = x;
      r[1] = y;
      r[2] = size;
      return r;
    }

    indexOf(key) {
      if (key === null) return FREE;
      let i = this.keyIndex.get(key);
      if (i === undefined) {
        i = this.gangs.length;
        this.gangs.push(key === "~" ? { key, other: true, label: "in use, other namespace" } : { key, namespace: key.split("/")[0], name: key.split("/")[1] });
        this.keyIndex.set(key, i);
      }
      return i;
    }

    applyDelta(delta) {
      const t0 = performance.now();
      for (const row of delta.gangs || []) {
        const i = this.indexOf(row.key);
        this.gangs[i] = row;
      }
      this.gangColours = null;
      const now = performance.now();
      for (const [index, owners, nominated, cordoned, ready] of delta.nodes || []) {
        const s = this.start[index];
        owners.forEach((k, j) => (this.owner[s + j] = this.indexOf(k)));
        for (let j = 0; j < owners.length; j++) this.nominated[s + j] = nominated ? this.indexOf(nominated[j]) : FREE;
        this.cordoned[index] = cordoned || !ready ? 1 : 0;
        this.pendingNodes.add(index);
        this.flash.set(index, now + 1500);
      }
      if ((delta.gangs || []).length) this.pendingNodes.add(-1); // colours of changed gangs: full draw
      this.requestFrame();
      this.stats.lastUpdateMs = performance.now() - t0;
    }

    // --- layout: domains as blocks that flow in rows; a node is a grid of its devices ---------------

    resize() {
      if (this.picture) {
        this.layout();
        this.drawAll();
      }
    }

    layout() {
      const width = Math.max(200, this.canvas.parentElement.clientWidth);
      const domains = this.picture.domains;
      const maxDevices = this.maxCells;
      this.devCols = maxDevices <= 4 ? maxDevices : Math.ceil(maxDevices / 2);
      this.devRows = Math.ceil(maxDevices / this.devCols);
      const target = Math.max(420, window.innerHeight * 1.1);
      let best = null;
      for (let size = 9; size >= 2; size--) {
        const plan = this.planLayout(width, size, domains);
        best = plan;
        if (plan.height <= target) break;
      }
      this.geom = best;
      this.placeNodes();
      const dpr = window.devicePixelRatio || 1;
      this.canvas.style.width = `${width}px`;
      this.canvas.style.height = `${best.height}px`;
      this.canvas.width = Math.round(width * dpr);
      this.canvas.height = Math.round(best.height * dpr);
      this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    }

    planLayout(width, size, domains) {
      const cell = size + GAP;
      const nodeW = this.devCols * cell + 2;
      const nodeH = this.devRows * cell + 2;
      const label = size >= 4 ? 14 : 0;
      const margin = size >= 4 ? 10 : 5;
      const blocks = [];
      let x = 0;
      let y = 0;
      let rowH = 0;
      for (const d of domains) {
        const perRow = Math.max(1, Math.min(d.count, 8, Math.floor(width / nodeW)));
        const w = perRow * nodeW;
        const h = label + Math.ceil(d.count / perRow) * nodeH;
        if (x > 0 && x + w > width) {
          x = 0;
          y += rowH + margin;
          rowH = 0;
        }
        blocks.push({ x, y, w, h, perRow, first: d.first, count: d.count, name: d.name, label });
        x += w + margin;
        rowH = Math.max(rowH, h);
      }
      return { size, cell, nodeW, nodeH, blocks, height: Math.max(60, y + rowH + 2) };
    }

    nodeOrigin(i) {
      return [this.nodeX[i], this.nodeY[i]];
    }

    placeNodes() {
      this.nodeX = new Float32Array(this.nodes.length);
      this.nodeY = new Float32Array(this.nodes.length);
      for (const b of this.geom.blocks) {
        for (let k = 0; k < b.count; k++) {
          this.nodeX[b.first + k] = b.x + (k % b.perRow) * this.geom.nodeW;
          this.nodeY[b.first + k] = b.y + b.label + Math.floor(k / b.perRow) * this.geom.nodeH;
        }
      }
    }

    // --- drawing ---------------------------------------------------------------------------------

    colourOf(gang) {
      if (!this.gangColours) this.gangColours = new Map();
      let c = this.gangColours.get(gang);
      if (c === undefined) {
        const row = this.gangs[gang];
        c = !row || row.other ? this.colours.other : g.gangColour(row, this.colourBy) || this.colours.other;
        this.gangColours.set(gang, c);
      }
      return c;
    }

    requestFrame() {
      if (this.frameRequested) return;
      this.frameRequested = true;
      const asked = performance.now();
      requestAnimationFrame(() => {
        this.frameRequested = false;
        if (performance.now() - asked > 50) this.stats.longFrames += 1;
        if (this.pendingNodes.has(-1)) {
          this.pendingNodes.clear();
          this.drawAll();
        } else {
          const t0 = performance.now();
          for (const i of this.pendingNodes) this.drawNode(i);
          this.pendingNodes.clear();
          this.stats.lastDrawMs = performance.now() - t0;
        }
        this.expireFlashes();
      });
    }

    expireFlashes() {
      const now = performance.now();
      let left = false;
      for (const [i, until] of this.flash) {
        if (until <= now) {
          this.flash.delete(i);
          this.pendingNodes.add(i);
        } else left = true;
      }
      if (this.pendingNodes.size || left) setTimeout(() => this.requestFrame(), left ? 300 : 0);
    }

    drawAll() {
      if (!this.geom) return;
      const t0 = performance.now();
      const ctx = this.ctx;
      ctx.fillStyle = this.colours.bg;
      ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
      ctx.fillStyle = this.colours.text;
      ctx.font = "11px system-ui, sans-serif";
      ctx.textBaseline = "top";
      for (const b of this.geom.blocks) if (b.label) ctx.fillText(b.name, b.x, b.y + 1, b.w);
      // In device order: a gang's squares are mostly next to each other, so fillStyle changes per run.
      const dim = this.highlight !== null;
      let current = "";
      const size = this.geom.size;
      const cell = this.geom.cell;
      const cols = this.devCols;
      for (let i = 0; i < this.nodes.length; i++) {
        const nx = this.nodeX[i] + 1;
        const ny = this.nodeY[i] + 1;
        for (let s = this.start[i], j = 0; s < this.start[i + 1]; s++, j++) {
          const colour = this.squareColour(i, s);
          if (colour !== current) ctx.fillStyle = current = colour;
          if (this.anyMig) {
            const r = this.rect(i, s);
            ctx.fillRect(r[0], r[1], r[2], r[2]);
          } else ctx.fillRect(nx + (j % cols) * cell, ny + ((j / cols) | 0) * cell, size, size);
        }
      }
      if (dim) {
        // Dim everything, then draw the lit gang again on top.
        ctx.fillStyle = this.colours.bg;
        ctx.globalAlpha = 0.6;
        ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
        ctx.globalAlpha = 1;
        ctx.fillStyle = this.colourOf(this.highlight);
        for (let i = 0; i < this.nodes.length; i++) {
          for (let s = this.start[i]; s < this.start[i + 1]; s++) {
            if (this.owner[s] === this.highlight) {
              const r = this.rect(i, s);
              ctx.fillRect(r[0], r[1], r[2], r[2]);
            }
          }
        }
      }
      for (let i = 0; i < this.nodes.length; i++) if (this.marked(i)) this.decorate(i, false);
      this.stats.draws += 1;
      this.stats.lastDrawMs = performance.now() - t0;
    }

    marked(i) {
      if (this.flash.has(i) || i === this.focusNode) return true;
      for (let s = this.start[i]; s < this.start[i + 1]; s++) if (this.dra[s] || this.nominated[s] !== FREE) return true;
      return false;
    }

    squareColour(i, s) {
      const o = this.owner[s];
      if (o !== FREE) return this.colourOf(o);
      return this.cordoned[i] ? this.colours.cordoned : this.colours.free;
    }

    drawNode(i) {
      const ctx = this.ctx;
      const [nx, ny] = this.nodeOrigin(i);
      ctx.fillStyle = this.colours.bg;
      ctx.fillRect(nx, ny, this.geom.nodeW, this.geom.nodeH);
      const dim = this.highlight !== null;
      for (let s = this.start[i]; s < this.start[i + 1]; s++) {
        const [x, y, size] = this.rect(i, s);
        ctx.fillStyle = this.squareColour(i, s);
        ctx.globalAlpha = dim && this.owner[s] !== this.highlight ? 0.4 : 1;
        ctx.fillRect(x, y, size, size);
      }
      ctx.globalAlpha = 1;
      this.decorate(i, dim);
    }

    // Marks over the squares: nominated (outline in the gang's colour), DRA (a dot), the lit gang,
    // squares that just changed (outlined for a moment), the keyboard focus.
    decorate(i, dim) {
      const ctx = this.ctx;
      const [nx, ny] = this.nodeOrigin(i);
      const flashing = this.flash.has(i);
      for (let s = this.start[i]; s < this.start[i + 1]; s++) {
        const [x, y, size] = this.rect(i, s);
        if (dim && this.owner[s] === this.highlight) {
          ctx.fillStyle = this.colourOf(this.owner[s]);
          ctx.fillRect(x, y, size, size);
        }
        if (this.nominated[s] !== FREE && this.owner[s] === FREE) {
          ctx.strokeStyle = this.colourOf(this.nominated[s]);
          ctx.lineWidth = 1;
          ctx.strokeRect(x + 0.5, y + 0.5, size - 1, size - 1);
        }
        if (this.dra[s] && size >= 3) {
          ctx.fillStyle = this.colours.mark;
          ctx.fillRect(x + size - 2, y, 2, 2);
        }
      }
      if (flashing || i === this.focusNode) {
        ctx.strokeStyle = this.colours.mark;
        ctx.lineWidth = 1;
        ctx.strokeRect(nx + 0.5, ny + 0.5, this.geom.nodeW - 1, this.geom.nodeH - 1);
      }
    }

    // Where device ``slot`` is drawn (CSS pixels), and the colour drawn there now: for tests and benches.
    squareAt(slot) {
      let lo = 0;
      let hi = this.nodes.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (this.start[mid] <= slot) lo = mid;
        else hi = mid - 1;
      }
      const r = this.rect(lo, slot);
      return { node: lo, x: r[0], y: r[1], size: r[2] };
    }

    pixel(slot) {
      const r = this.squareAt(slot);
      const dpr = window.devicePixelRatio || 1;
      const d = this.ctx.getImageData(Math.floor((r.x + r.size / 2) * dpr), Math.floor((r.y + r.size / 2) * dpr), 1, 1).data;
      return `${d[0]},${d[1]},${d[2]}`;
    }

    setColourBy(mode) {
      this.colourBy = mode;
      this.gangColours = null;
      this.drawAll();
    }

    // --- pointer and keyboard ----------------------------------------------------------------------

    hit(e) {
      if (!this.geom) return null;
      const r = this.canvas.getBoundingClientRect();
      const x = e.clientX - r.left;
      const y = e.clientY - r.top;
      for (const b of this.geom.blocks) {
        if (x < b.x || x >= b.x + b.w || y < b.y + b.label || y >= b.y + b.h) continue;
        const col = Math.floor((x - b.x) / this.geom.nodeW);
        const row = Math.floor((y - b.y - b.label) / this.geom.nodeH);
        const k = row * b.perRow + col;
        if (k >= b.count) return null;
        const i = b.first + k;
        const [nx, ny] = this.nodeOrigin(i);
        const dc = Math.min(this.devCols - 1, Math.floor((x - nx - 1) / this.geom.cell));
        const dr = Math.floor((y - ny - 1) / this.geom.cell);
        const c = dr * this.devCols + dc;
        let found = -1;
        for (let s = this.start[i]; s < this.start[i + 1] && c >= 0; s++) {
          if (this.cellOf[s] !== c) continue;
          const [sx, sy, size] = this.rect(i, s);
          const inside = x >= sx && x < sx + size + 1 && y >= sy && y < sy + size + 1;
          if (found < 0 || inside) found = s; // a MIG cell: the partition under the pointer, else its first
          if (inside) break;
        }
        if (found < 0) return { node: i, device: null };
        return { node: i, device: found - this.start[i], slot: found };
      }
      return null;
    }

    describe(h) {
      const node = this.picture.nodes[h.node] ? this.nodes[h.node] : null;
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
      return lines.join("\n");
    }

    hover(e) {
      const h = this.hit(e);
      const o = h && h.device !== null ? this.owner[h.slot] : FREE;
      const row = o !== FREE ? this.gangs[o] : null;
      this.setHighlight(row && !row.other ? o : null, h ? { text: this.describe(h), x: e.clientX, y: e.clientY } : null);
      this.canvas.style.cursor = row && !row.other ? "pointer" : "default";
    }

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
    }

    click(e) {
      const h = this.hit(e);
      if (!h || h.device === null) return;
      const row = this.gangs[this.owner[h.slot]];
      if (row && !row.other && row.namespace) location.href = g.gangUrl(row.namespace, row.name);
    }

    key(e) {
      if (!this.nodes || !this.nodes.length) return;
      const moves = { ArrowRight: 1, ArrowLeft: -1 };
      let i = this.focusNode < 0 ? 0 : this.focusNode;
      const b = this.geom.blocks[this.nodes[i].domain];
      if (moves[e.key]) i += moves[e.key];
      else if (e.key === "ArrowDown") i += b.perRow;
      else if (e.key === "ArrowUp") i -= b.perRow;
      else if (e.key === "Enter" && this.focusNode >= 0) {
        const s = this.start[i];
        const o = [...this.owner.subarray(s, this.start[i + 1])].find((x) => x !== FREE && !this.gangs[x].other);
        if (o !== undefined) location.href = g.gangUrl(this.gangs[o].namespace, this.gangs[o].name);
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
    }
  }

  window.GpuMap = GpuMap;
})();
