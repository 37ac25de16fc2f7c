// The GPU map's view, mixed into GpuMap (map.js): zoom and pan (the canvas keeps its size and shows a part
// of the map, drawn through one transform), and which nodes a search and a filter leave lit. Loaded before
// map.js; the controls that drive it are the overview's (overview.js).
(function () {
  "use strict";
  const g = window.gangweb;
  const FREE = g.MAP_FREE;
  const MAX_ZOOM = 32;

  g.mapView = {
    initView() {
      this.zoom = 1;
      this.panX = 0;
      this.panY = 0;
      this.query = "";
      this.filter = "all";
      this.match = null; // Uint8Array per node (1: lit) while a search or filter is on, else null
      const c = this.canvas;
      c.addEventListener("wheel", (e) => {
        if (!e.ctrlKey && !e.metaKey && this.zoom === 1) return; // the page scrolls until the map is zoomed
        e.preventDefault();
        const r = c.getBoundingClientRect();
        this.zoomAt(this.zoom * (e.deltaY < 0 ? 1.25 : 0.8), e.clientX - r.left, e.clientY - r.top);
      }, { passive: false });
      c.addEventListener("pointerdown", (e) => {
        this.dragged = false;
        if (this.zoom === 1 || e.button !== 0) return;
        const from = { x: e.clientX, y: e.clientY, panX: this.panX, panY: this.panY };
        const move = (m) => {
          const dx = m.clientX - from.x;
          const dy = m.clientY - from.y;
          if (Math.abs(dx) + Math.abs(dy) > 3) this.dragged = true;
          if (this.dragged) this.panTo(from.panX - dx / this.zoom, from.panY - dy / this.zoom);
        };
        const up = () => {
          window.removeEventListener("pointermove", move);
          window.removeEventListener("pointerup", up);
          setTimeout(() => (this.dragged = false), 0); // the click that ends a drag opens nothing
        };
        window.addEventListener("pointermove", move);
        window.addEventListener("pointerup", up);
      });
    },

    // The canvas' CSS pixels: the whole map at zoom 1; zoomed, at least most of a screen's height, so a
    // short map (a few racks) still has room to show what it zooms onto.
    viewW() {
      return this.geom ? this.geom.width : 0;
    },
    viewH() {
      return this.viewHeight || 0;
    },
    sizeCanvas() {
      const h = this.zoom > 1 ? Math.max(this.geom.height, Math.round(Math.min(640, window.innerHeight * 0.7))) : this.geom.height;
      if (h === this.viewHeight && this.canvas.width === Math.round(this.geom.width * (window.devicePixelRatio || 1))) return;
      const dpr = window.devicePixelRatio || 1;
      this.viewHeight = h;
      this.canvas.style.width = `${this.geom.width}px`;
      this.canvas.style.height = `${h}px`;
      this.canvas.width = Math.round(this.geom.width * dpr);
      this.canvas.height = Math.round(h * dpr);
    },

    // Map coordinates to the canvas (device pixels): drawing and hit-testing go through this one transform.
    viewTransform() {
      const k = (window.devicePixelRatio || 1) * this.zoom;
      this.ctx.setTransform(k, 0, 0, k, -this.panX * k, -this.panY * k);
    },
    screenTransform() {
      const dpr = window.devicePixelRatio || 1;
      this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    },
    toMap(x, y) {
      return [x / this.zoom + this.panX, y / this.zoom + this.panY];
    },
    toScreen(x, y) {
      return [(x - this.panX) * this.zoom, (y - this.panY) * this.zoom];
    },
    // Is node i (partly) in view? A full draw skips the others.
    inView(i) {
      if (this.zoom === 1) return true;
      const x = this.nodeX[i];
      const y = this.nodeY[i];
      return x + this.geom.nodeW >= this.panX && y + this.geom.nodeH >= this.panY && x <= this.panX + this.viewW() / this.zoom && y <= this.panY + this.viewH() / this.zoom;
    },

    // Keep the view on the map: no pan beyond its edges.
    clampPan(x, y) {
      this.panX = Math.max(0, Math.min(x, this.geom.width - this.viewW() / this.zoom));
      this.panY = Math.max(0, Math.min(y, this.geom.height - this.viewH() / this.zoom));
    },
    panTo(x, y) {
      if (!this.geom) return; // not laid out yet
      this.sizeCanvas();
      this.clampPan(x, y);
      this.viewTransform();
      this.drawAll();
      if (this.options.onView) this.options.onView(this);
    },

    // Zoom by keeping the map point under (sx, sy) (CSS pixels in the canvas) where it is.
    zoomAt(zoom, sx, sy) {
      if (!this.geom) return;
      const z = Math.max(1, Math.min(MAX_ZOOM, zoom));
      const [mx, my] = this.toMap(sx, sy);
      this.zoom = z;
      this.sizeCanvas();
      this.panTo(mx - sx / z, my - sy / z);
    },
    zoomBy(factor) {
      this.zoomAt(this.zoom * factor, this.viewW() / 2, this.viewH() / 2);
    },
    fit() {
      this.zoom = 1;
      this.panTo(0, 0);
    },

    // Zoom onto the given nodes' box (the matches of a search).
    show(nodes) {
      if (!nodes.length || !this.geom) return;
      let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
      for (const i of nodes) {
        x0 = Math.min(x0, this.nodeX[i]);
        y0 = Math.min(y0, this.nodeY[i]);
        x1 = Math.max(x1, this.nodeX[i] + this.geom.nodeW);
        y1 = Math.max(y1, this.nodeY[i] + this.geom.nodeH);
      }
      const pad = this.geom.nodeW;
      this.zoom = 2; // the zoomed view's size first (sizeCanvas), then the zoom that fits the box in it
      this.sizeCanvas();
      const z = Math.max(1, Math.min(MAX_ZOOM, this.viewW() / (x1 - x0 + pad), this.viewH() / (y1 - y0 + pad)));
      this.zoom = z;
      this.panTo((x0 + x1) / 2 - this.viewW() / (2 * z), (y0 + y1) / 2 - this.viewH() / (2 * z));
    },

    // --- search and filter ---------------------------------------------------------------------------

    setSearch(query, filter) {
      this.query = (query || "").trim().toLowerCase();
      this.filter = filter || "all";
      this.computeMatch();
      this.drawAll();
      return this.matchCount();
    },

    computeMatch() {
      if (!this.nodes) return;
      if (!this.query && this.filter === "all") {
        this.match = null;
        return;
      }
      const q = this.query;
      // Gangs whose key (namespace/name) holds the query: a namespace matches through its gangs.
      const gangHit = this.gangs.map((row) => !!q && !!row && !row.other && !!row.key && row.key.toLowerCase().includes(q));
      const match = this.match && this.match.length === this.nodes.length ? this.match : new Uint8Array(this.nodes.length);
      for (let i = 0; i < this.nodes.length; i++) match[i] = this.nodeMatches(i, q, gangHit) ? 1 : 0;
      this.match = match;
    },

    nodeMatches(i, q, gangHit) {
      const from = this.start[i];
      const to = this.start[i + 1];
      let ok = true;
      if (this.filter === "free") {
        ok = false;
        if (!this.cordoned[i]) for (let s = from; s < to; s++) if (this.owner[s] === FREE) ok = true;
      } else if (this.filter === "unusable") ok = !!this.cordoned[i];
      else if (this.filter === "broken") {
        ok = false;
        for (let s = from; s < to; s++) if (this.broken(this.owner[s])) ok = true;
      } else if (this.filter === "nominated") {
        ok = false;
        for (let s = from; s < to; s++) if (this.nominated[s] !== FREE) ok = true;
      }
      if (!ok || !q) return ok;
      const node = this.nodes[i];
      if (node.name.toLowerCase().includes(q)) return true;
      if (this.picture.domains[node.domain].name.toLowerCase().includes(q)) return true;
      for (let s = from; s < to; s++) {
        const o = this.owner[s];
        if ((o !== FREE && gangHit[o]) || (this.nominated[s] !== FREE && gangHit[this.nominated[s]])) return true;
      }
      return false;
    },

    matchCount() {
      if (!this.match) return null;
      let nodes = 0;
      let devices = 0;
      for (let i = 0; i < this.match.length; i++) {
        if (!this.match[i]) continue;
        nodes += 1;
        devices += this.start[i + 1] - this.start[i];
      }
      return { nodes, devices };
    },

    matchedNodes() {
      const out = [];
      if (this.match) for (let i = 0; i < this.match.length; i++) if (this.match[i]) out.push(i);
      return out;
    },
  };
})();
