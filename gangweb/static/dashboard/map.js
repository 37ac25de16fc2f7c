// The GPU map on one <canvas>: one square per device, nodes as small grids, grouped by topology domain.
// Built for 5,000 nodes x 8 GPUs: devices live in typed arrays, a full draw batches squares by colour,
// and a delta redraws only the nodes it names (inside one animation frame). This file holds the data and the
// drawing; map-geometry.js where each square is, map-view.js zoom, pan, search and filter, map-pointer.js
// hover, click and keys (loaded before it).
(function () {
  "use strict";
  const g = window.gangweb;

  const FREE = g.MAP_FREE;

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
      this.initView();
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
      // A gang row changes every tick it waits (its waiting time); only one drawn otherwise (its colour, its
      // hatching) redraws the nodes it holds or is nominated on, not the whole map.
      const redrawn = new Set();
      for (const row of delta.gangs || []) {
        const i = this.indexOf(row.key);
        const before = this.gangs[i];
        this.gangs[i] = row;
        if (this.looks(before) !== this.looks(row)) redrawn.add(i);
      }
      this.gangColours = null;
      if (redrawn.size) {
        for (let n = 0; n < this.nodes.length; n++) {
          for (let s = this.start[n]; s < this.start[n + 1]; s++) {
            if (redrawn.has(this.owner[s]) || redrawn.has(this.nominated[s])) {
              this.pendingNodes.add(n);
              break;
            }
          }
        }
      }
      const now = performance.now();
      for (const [index, owners, nominated, cordoned, ready] of delta.nodes || []) {
        const s = this.start[index];
        owners.forEach((k, j) => (this.owner[s + j] = this.indexOf(k)));
        for (let j = 0; j < owners.length; j++) this.nominated[s + j] = nominated ? this.indexOf(nominated[j]) : FREE;
        this.cordoned[index] = cordoned || !ready ? 1 : 0;
        this.pendingNodes.add(index);
        this.flash.set(index, now + 1500);
      }
      if (this.match) this.computeMatch();
      if (this.match) this.pendingNodes.add(-1); // matches may have changed anywhere: full draw
      this.requestFrame();
      this.stats.lastUpdateMs = performance.now() - t0;
    }

    // What of a gang row its squares show, in every colouring: a change of it redraws them.
    looks(row) {
      if (!row || row.other) return "other";
      return [g.gangColour(row, "tier"), g.gangColour(row, "state"), g.gangColour(row, "namespace"), !!row.broken].join();
    }

    // --- layout (map-geometry.js): domains as blocks that flow in rows; a node is a grid of its devices

    resize() {
      if (this.picture) {
        this.layout();
        this.drawAll();
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
      this.screenTransform();
      ctx.fillStyle = this.colours.bg;
      ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
      this.viewTransform();
      ctx.fillStyle = this.colours.text;
      ctx.font = "11px system-ui, sans-serif";
      ctx.textBaseline = "top";
      // Each rack (or zone) named over its nodes; its zone too where the block is wide enough.
      for (const b of this.geom.blocks) {
        if (!b.label) continue;
        const zone = this.picture.domains[b.index].zone;
        const both = zone && zone !== b.name ? `${b.name} · ${zone}` : b.name;
        ctx.fillText(ctx.measureText(both).width <= b.w ? both : b.name, b.x, b.y + 1, b.w);
      }
      // In device order: a gang's squares are mostly next to each other, so fillStyle changes per run.
      const dim = this.highlight !== null;
      let current = "";
      const size = this.geom.size;
      const cell = this.geom.cell;
      const cols = this.devCols;
      for (let i = 0; i < this.nodes.length; i++) {
        if (!this.inView(i)) continue;
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
        this.screenTransform();
        ctx.fillStyle = this.colours.bg;
        ctx.globalAlpha = 0.6;
        ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
        ctx.globalAlpha = 1;
        this.viewTransform();
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
      for (let i = 0; i < this.nodes.length; i++) {
        if (!this.inView(i)) continue;
        if (this.marked(i)) this.decorate(i, false);
        this.fadeUnmatched(i);
      }
      this.stats.draws += 1;
      this.stats.lastDrawMs = performance.now() - t0;
    }

    marked(i) {
      if (this.flash.has(i) || i === this.focusNode) return true;
      for (let s = this.start[i]; s < this.start[i + 1]; s++) if (this.dra[s] || this.nominated[s] !== FREE || this.broken(this.owner[s])) return true;
      return false;
    }

    // A broken gang (fewer than minCount members run while it holds GPUs): its squares are hatched.
    broken(o) {
      return o !== FREE && !!(this.gangs[o] && this.gangs[o].broken);
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
      this.fadeUnmatched(i);
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
        if (this.broken(this.owner[s]) && size >= 3) {
          ctx.strokeStyle = this.colours.bg;
          ctx.lineWidth = 1;
          ctx.beginPath();
          for (let d = 2; d < size * 2; d += 3) {
            ctx.moveTo(x + Math.max(0, d - size), y + Math.min(d, size));
            ctx.lineTo(x + Math.min(d, size), y + Math.max(0, d - size));
          }
          ctx.stroke();
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

  }

  // Where things are and what is under the pointer (map-geometry.js); the pointer and keyboard (map-pointer.js).
  Object.assign(GpuMap.prototype, g.mapGeometry, g.mapView, g.mapPointer);
  window.GpuMap = GpuMap;
})();
