// The GPU map's squares, mixed into GpuMap (map.js): written as pixels into one ImageData the size of the
// canvas and put on it, not drawn by a fillRect each (160,000 of them at 20,000 nodes took a loaded machine
// most of a second; writing their pixels takes milliseconds). A full draw is a pass over bands of the map,
// a few per animation frame (at most ~10 ms of work each), the bands on screen first, so neither the first
// draw nor a redraw is one long task. Rack names and the marks over squares (nominated, DRA, hatching,
// outlines) are still drawn on the canvas, after their band's pixels are put. Loaded before map.js.
(function () {
  "use strict";
  const g = window.gangweb;
  const FREE = g.MAP_FREE;
  const BUDGET_MS = 14; // work per animation frame in a pass
  const FIRST_BUDGET_MS = 40; // in the first one: nothing on the map yet, fewer frames (each commits the canvas)
  const UNIT_NODES = 256; // nodes per band at most (a band is whole rows of nodes across one row of racks)
  const DIM = 1; // a square not of the lit gang: 40 % of its colour over the background
  const FADE = 2; // a node a search or filter leaves out: 20 %

  g.mapRaster = {
    // A CSS colour as the canvas paints it, packed as the Uint32Array view of ImageData reads it (RGBA in
    // memory: little-endian ABGR).
    packColour(css) {
      if (!this.packed) this.packed = new Map();
      let v = this.packed.get(css);
      if (v !== undefined) return v;
      const probe = this.colourProbe || (this.colourProbe = document.createElement("canvas").getContext("2d"));
      probe.fillStyle = "#000";
      probe.fillStyle = css;
      const s = probe.fillStyle;
      let r = 0, gr = 0, b = 0;
      if (s[0] === "#") {
        r = parseInt(s.slice(1, 3), 16);
        gr = parseInt(s.slice(3, 5), 16);
        b = parseInt(s.slice(5, 7), 16);
      } else {
        const m = s.match(/[\d.]+/g) || [0, 0, 0];
        [r, gr, b] = m.map(Number);
      }
      v = ((255 << 24) | (b << 16) | (gr << 8) | r) >>> 0;
      this.packed.set(css, v);
      return v;
    },

    // ``c`` dimmed (DIM) or faded (FADE) toward the background, as a translucent background over it would.
    variant(c, kind) {
      if (!this.variants) this.variants = [null, new Map(), new Map()];
      let v = this.variants[kind].get(c);
      if (v !== undefined) return v;
      const a = kind === DIM ? 0.4 : 0.2;
      const bg = this.packColour(this.colours.bg);
      const mix = (shift) => Math.round(((c >>> shift) & 255) * a + ((bg >>> shift) & 255) * (1 - a));
      v = ((255 << 24) | (mix(16) << 16) | (mix(8) << 8) | mix(0)) >>> 0;
      this.variants[kind].set(c, v);
      return v;
    },

    packedOf(gang) {
      if (!this.gangColours) this.colourOf(gang);
      let v = this.gangPacked.get(gang);
      if (v === undefined) {
        v = this.packColour(this.colourOf(gang));
        this.gangPacked.set(gang, v);
      }
      return v;
    },

    // The pixels of device ``s`` of node ``i``: its gang's colour (free, cordoned), dimmed while another gang
    // is lit, faded when a search leaves its node out.
    squarePixel(i, s, dim, faded) {
      const o = this.owner[s];
      let c;
      if (o !== FREE) c = this.packedOf(o);
      else c = this.packColour(this.cordoned[i] ? this.colours.cordoned : this.colours.free);
      if (dim && o !== this.highlight) c = this.variant(c, DIM);
      if (faded) c = this.variant(c, FADE);
      return c;
    },

    // The ImageData the size of the canvas (device pixels), kept while the canvas keeps its size.
    frameBuffer() {
      const w = this.canvas.width;
      const h = this.canvas.height;
      if (!this.frame || this.frame.width !== w || this.frame.height !== h) {
        this.frame = this.ctx.createImageData(Math.max(1, w), Math.max(1, h));
        this.pixels = new Uint32Array(this.frame.data.buffer);
      }
      return this.pixels;
    },

    // Map coordinates to device pixels: x * k - ox (the view transform of map-view.js, rounded).
    deviceView() {
      const k = (window.devicePixelRatio || 1) * this.zoom;
      return { k, ox: this.panX * k, oy: this.panY * k, w: this.frame.width, h: this.frame.height };
    },

    // Node ``i``'s squares into the buffer (its box cleared first); the box in device pixels, or null when
    // the node is off the canvas.
    rasterNode(i, px, v, dim, clear) {
      const { k, ox, oy, w, h } = v;
      const nx = this.nodeX[i];
      const ny = this.nodeY[i];
      const bx0 = Math.max(0, Math.round(nx * k - ox));
      const bx1 = Math.min(w, Math.round((nx + this.geom.nodeW) * k - ox));
      const by0 = Math.max(0, Math.round(ny * k - oy));
      const by1 = Math.min(h, Math.round((ny + this.geom.nodeH) * k - oy));
      if (bx1 <= bx0 || by1 <= by0) return null;
      if (clear) {
        const bg = this.packColour(this.colours.bg);
        for (let y = by0; y < by1; y++) px.fill(bg, y * w + bx0, y * w + bx1);
      }
      const faded = !!this.match && !this.match[i];
      const cell = this.geom.cell;
      const size = this.geom.size;
      const cols = this.devCols;
      for (let s = this.start[i], j = 0; s < this.start[i + 1]; s++, j++) {
        let x, y, sz;
        if (this.anyMig) {
          const r = this.rect(i, s);
          x = r[0];
          y = r[1];
          sz = r[2];
        } else {
          x = nx + 1 + (j % cols) * cell;
          y = ny + 1 + ((j / cols) | 0) * cell;
          sz = size;
        }
        const x0 = Math.max(0, Math.round(x * k - ox));
        const x1 = Math.min(w, Math.round((x + sz) * k - ox));
        const y0 = Math.max(0, Math.round(y * k - oy));
        const y1 = Math.min(h, Math.round((y + sz) * k - oy));
        if (x1 <= x0 || y1 <= y0) continue;
        const c = this.squarePixel(i, s, dim, faded);
        for (let yy = y0; yy < y1; yy++) {
          const row = yy * w;
          for (let xx = x0; xx < x1; xx++) px[row + xx] = c;
        }
      }
      return [bx0, by0, bx1, by1];
    },

    // The bands of a full draw: per row of racks (geom.rows), runs of its rows of nodes, about UNIT_NODES
    // nodes each. A row's first band reaches up to the previous row's end (its rack names, the margin),
    // its last down to the next row's start, the map's first and last to the canvas' edges: the bands
    // tile the canvas, so a pass rewrites every pixel of it.
    bands() {
      const out = [];
      const rows = this.geom.rows;
      const top = this.geom.labelH;
      const nodeH = this.geom.nodeH;
      rows.forEach((row, r) => {
        const step = Math.max(1, Math.floor(UNIT_NODES / Math.max(1, row.perNodeRow)));
        for (let a = 0; a < row.nodeRows; a += step) {
          const b = Math.min(row.nodeRows, a + step);
          out.push({
            row: r,
            from: a,
            to: b,
            y0: a === 0 ? (r === 0 ? -Infinity : row.y) : row.y + top + a * nodeH,
            y1: b === row.nodeRows ? (r === rows.length - 1 ? Infinity : rows[r + 1].y) : row.y + top + b * nodeH,
          });
        }
      });
      return out;
    },

    // A full draw: every band, the ones on screen first, a few per animation frame, from the next frame on
    // (where the layout the page needs anyway is read: not forced in the task that asked). A full draw asked
    // for while one runs replaces it (what the first drew stays until drawn again).
    drawAll() {
      if (!this.geom && !this.layoutWanted) return;
      this.passWanted = true;
      this.passFrame();
    },

    firstBudget() {
      return this.stats.firstPaintMs === null ? FIRST_BUDGET_MS : BUDGET_MS;
    },

    // The whole draw now, in one task (benches time a full redraw with it).
    drawAllNow() {
      if (this.layoutWanted) this.layout();
      this.beginPass();
      while (this.pass) this.passStep(Infinity);
    },

    passFrame() {
      if (this.passAsked) return;
      this.passAsked = true;
      requestAnimationFrame(() => {
        this.passAsked = false;
        const t0 = performance.now();
        if (this.layoutWanted) this.layout();
        if (this.passWanted) this.beginPass();
        // A frame that laid the map out (reading the page's layout) may have spent its budget: the bands wait.
        if (this.pass) this.passStep(this.firstBudget() - (performance.now() - t0));
      });
    },

    beginPass() {
      this.passWanted = false;
      if (!this.geom) return;
      this.frameBuffer();
      const v = this.deviceView();
      const bands = this.geom.bandList || (this.geom.bandList = this.bands());
      const box = this.canvas.getBoundingClientRect();
      // What of the map the window shows (map coordinates): drawn first.
      const seenFrom = -box.top / this.zoom + this.panY;
      const seenTo = (window.innerHeight - box.top) / this.zoom + this.panY;
      const inCanvas = (u) => Math.min(v.h, u.y1 * v.k - v.oy) > Math.max(0, u.y0 * v.k - v.oy);
      const onScreen = [];
      const later = [];
      for (const u of bands) {
        if (!inCanvas(u)) continue;
        (u.y1 > seenFrom && u.y0 < seenTo ? onScreen : later).push(u);
      }
      this.pass = { todo: onScreen.concat(later), onScreen: onScreen.length, next: 0, view: v, dim: this.highlight !== null };
      this.stats.lastDrawMs = 0;
    },

    passStep(budget) {
      const pass = this.pass;
      const t0 = performance.now();
      const px = this.frameBuffer();
      const v = pass.view;
      if (v.w !== this.frame.width || v.h !== this.frame.height) return this.drawAll(); // resized meanwhile
      const bg = this.packColour(this.colours.bg);
      this.viewTransform();
      this.ctx.font = "11px system-ui, sans-serif";
      this.ctx.textBaseline = "top";
      // Band by band (its pixels, put, then what is drawn over them) while the frame's budget lasts.
      while (pass.next < pass.todo.length && performance.now() - t0 < budget) {
        const u = pass.todo[pass.next++];
        const y0 = Math.max(0, Math.round(u.y0 * v.k - v.oy));
        const y1 = Math.min(v.h, Math.round(u.y1 * v.k - v.oy));
        if (y1 <= y0) continue;
        px.fill(bg, y0 * v.w, y1 * v.w);
        for (const i of this.bandNodes(u)) this.rasterNode(i, px, v, pass.dim, false);
        this.ctx.putImageData(this.frame, 0, 0, 0, y0, v.w, y1 - y0);
        this.overBand(u);
        if (pass.next >= pass.onScreen && !pass.screenDone) {
          pass.screenDone = true;
          if (this.stats.firstScreenMs === null) {
            this.stats.firstScreenMs = performance.now();
            performance.mark("map-first-screen");
          }
        }
      }
      this.stats.lastDrawMs += performance.now() - t0;
      if (pass.next < pass.todo.length) return this.passFrame();
      this.pass = null;
      this.stats.draws += 1;
      if (this.stats.firstPaintMs === null) {
        this.stats.firstPaintMs = performance.now();
        performance.mark("map-first-paint");
      }
      if (this.pendingNodes.size) this.requestFrame();
    },

    // The nodes of band ``u``: in each rack of its row, the rows of nodes it spans.
    *bandNodes(u) {
      for (const b of this.geom.rows[u.row].blocks) {
        const from = b.first + u.from * b.perRow;
        const to = b.first + Math.min(b.count, u.to * b.perRow);
        for (let i = from; i < to; i++) yield i;
      }
    },

    // What is drawn on the canvas over a band's pixels: its racks' names (in the band that holds them)
    // and the marks over its nodes' squares.
    overBand(u) {
      const ctx = this.ctx;
      if (u.from === 0) {
        ctx.fillStyle = this.colours.text;
        for (const b of this.geom.rows[u.row].blocks) {
          if (!b.label) continue;
          if (b.text === undefined) {
            // Each rack (or zone) named over its nodes; its zone too where the block is wide enough.
            const zone = this.picture.domains[b.index].zone;
            const both = zone && zone !== b.name ? `${b.name} · ${zone}` : b.name;
            b.text = ctx.measureText(both).width <= b.w ? both : b.name;
            b.squeeze = b.text === b.name && ctx.measureText(b.name).width > b.w; // then fitted to the width
          }
          if (b.squeeze) ctx.fillText(b.text, b.x, b.y + 1, b.w);
          else ctx.fillText(b.text, b.x, b.y + 1);
        }
      }
      for (const i of this.bandNodes(u)) if (this.marked(i)) this.decorate(i);
    },

    // The nodes of a delta: a few one by one; more, band by band (their pixels, one put of the band's rows,
    // then the band's names and marks again), as many bands as the frame's budget allows. Those drawn leave
    // ``pending``. (A put of each of 400 nodes took a loaded machine 40 ms.)
    drawNodes(pending) {
      if (!this.geom) return;
      if (pending.size <= 24) {
        for (const i of pending) this.drawNode(i);
        pending.clear();
        return;
      }
      const bandOf = this.bandIndex();
      const bands = this.geom.bandList;
      const byBand = new Map();
      for (const i of pending) {
        const b = bandOf[i];
        if (!byBand.has(b)) byBand.set(b, []);
        byBand.get(b).push(i);
      }
      const px = this.frameBuffer();
      const v = this.deviceView();
      const dim = this.highlight !== null;
      const t0 = performance.now();
      this.viewTransform();
      this.ctx.font = "11px system-ui, sans-serif";
      this.ctx.textBaseline = "top";
      for (const [b, nodes] of byBand) {
        if (performance.now() - t0 > BUDGET_MS) break;
        const u = bands[b];
        for (const i of nodes) {
          this.rasterNode(i, px, v, dim, true);
          pending.delete(i);
        }
        const y0 = Math.max(0, Math.round(u.y0 * v.k - v.oy));
        const y1 = Math.min(v.h, Math.round(u.y1 * v.k - v.oy));
        if (y1 <= y0) continue;
        this.ctx.putImageData(this.frame, 0, 0, 0, y0, v.w, y1 - y0);
        this.overBand(u);
      }
    },

    // Per node, the index of its band in ``geom.bandList``.
    bandIndex() {
      const geom = this.geom;
      if (geom.bandOf) return geom.bandOf;
      const bands = geom.bandList || (geom.bandList = this.bands());
      geom.bandOf = new Int32Array(this.nodes.length);
      bands.forEach((u, k) => {
        for (const i of this.bandNodes(u)) geom.bandOf[i] = k;
      });
      return geom.bandOf;
    },

    // One node again (a delta, the keyboard focus): its pixels, then its marks.
    drawNode(i) {
      if (!this.geom) return;
      const px = this.frameBuffer();
      const v = this.deviceView();
      const box = this.rasterNode(i, px, v, this.highlight !== null, true);
      if (!box) return;
      this.ctx.putImageData(this.frame, 0, 0, box[0], box[1], box[2] - box[0], box[3] - box[1]);
      this.viewTransform();
      this.decorate(i);
    },
  };
})();
