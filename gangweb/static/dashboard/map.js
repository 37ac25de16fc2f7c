// The GPU map on one <canvas>: one square per device, nodes as small grids, grouped by topology domain.
// Built for 5,000-20,000 nodes x 8 GPUs: map/ is parsed off the main thread into typed arrays (map-data.js),
// a full draw writes pixels band by band over a few animation frames (map-raster.js), and a delta redraws
// only the nodes it names (inside one animation frame). This file holds the data, deltas and marks;
// map-geometry.js where each square is, map-view.js zoom, pan, search and filter, map-pointer.js hover,
// click and keys (loaded before it).
(function () {
  "use strict";
  const g = window.gangweb;

  const FREE = g.MAP_FREE;
  // map-data.js is loaded async from the overview's <head>: it asks for map/ and has a worker parse it while
  // the page's other scripts load. Waited for where it has not run yet.
  function mapData() {
    if (self.gangwebMapData) return Promise.resolve(self.gangwebMapData);
    const script = document.getElementById("map-data");
    return new Promise((resolve, reject) => {
      script.addEventListener("load", () => resolve(self.gangwebMapData));
      script.addEventListener("error", () => reject(new Error("map-data.js did not load")));
    });
  }

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
      this.stats = { firstPaintMs: null, firstScreenMs: null, draws: 0, lastDrawMs: 0, lastUpdateMs: 0, longFrames: 0 };
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
      this.variants = null; // dimmed and faded pixels, mixed with the background (map-raster.js)
    }

    // --- data ------------------------------------------------------------------------------------

    // ``data``: what map-data.js makes of map/'s picture (``fetchPicture``), or the picture itself.
    setPicture(data) {
      const compact = data.nodes ? self.gangwebMapData.compactPicture(data) : data;
      this.picture = compact.rest;
      this.gangs = compact.rest.gangs.slice();
      this.keyIndex = new Map();
      for (let i = 0; i < this.gangs.length; i++) this.keyIndex.set(this.gangs[i].key, i);
      Object.assign(this, compact.arrays); // start, owner, nominated, dra, cordoned, domainOf, cellOf, partOf, partsOf
      const names = compact.names;
      const domainOf = this.domainOf;
      this.nodes = new Array(names.length);
      for (let i = 0; i < names.length; i++) this.nodes[i] = { name: names[i], domain: domainOf[i] };
      this.devName = compact.devName || [];
      this.mig = compact.mig || [];
      this.maxCells = compact.maxCells;
      this.anyMig = compact.anyMig;
      this.gangColours = null;
      this.pendingNodes.clear();
      // Laid out now and drawn at once as far as one frame's budget goes (the bands in the window first), the
      // rest over the next frames (map-raster.js): waiting for a frame first cost a busy machine a frame cycle.
      this.pass = null;
      this.layout();
      this.beginPass();
      this.passStep(this.firstBudget());
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
      if (!this.picture || !this.geom) return;
      if (Math.max(200, this.canvas.parentElement.clientWidth) === this.geom.width) return; // drawn for it
      this.layout();
      this.drawAll();
    }

    // --- drawing ---------------------------------------------------------------------------------

    colourOf(gang) {
      if (!this.gangColours) {
        this.gangColours = new Map();
        this.gangPacked = new Map(); // the same, as pixels (map-raster.js)
      }
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
        // A full draw runs or is coming: it draws these nodes as they are, and asks again when done.
        if (this.pass || this.passWanted || this.layoutWanted) return;
        if (this.pendingNodes.has(-1)) {
          this.pendingNodes.clear();
          this.drawAll();
        } else {
          const t0 = performance.now();
          this.drawNodes(this.pendingNodes); // leaves what did not fit in the frame's budget
          this.stats.lastDrawMs = performance.now() - t0;
          if (this.pendingNodes.size) return this.requestFrame();
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

    marked(i) {
      if (this.flash.has(i) || i === this.focusNode) return true;
      for (let s = this.start[i]; s < this.start[i + 1]; s++) if (this.dra[s] || this.nominated[s] !== FREE || this.broken(this.owner[s])) return true;
      return false;
    }

    // A broken gang (fewer than minCount members run while it holds GPUs): its squares are hatched.
    broken(o) {
      return o !== FREE && !!(this.gangs[o] && this.gangs[o].broken);
    }

    // Marks over the squares (map-raster.js drew them): nominated (outline in the gang's colour), DRA (a
    // dot), hatching of a broken gang, squares that just changed (outlined for a moment), the keyboard focus;
    // faint on a node a search leaves out, as its squares are.
    decorate(i) {
      const ctx = this.ctx;
      const [nx, ny] = this.nodeOrigin(i);
      const flashing = this.flash.has(i);
      ctx.globalAlpha = this.match && !this.match[i] ? 0.2 : 1;
      for (let s = this.start[i]; s < this.start[i + 1]; s++) {
        const [x, y, size] = this.rect(i, s);
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
      ctx.globalAlpha = 1;
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
  Object.assign(GpuMap.prototype, g.mapGeometry, g.mapView, g.mapPointer, g.mapRaster);
  // map/ as ``setPicture`` takes it (map-data.js).
  GpuMap.fetchPicture = async (url) => (await mapData()).fetchPicture(url);
  window.GpuMap = GpuMap;
})();
