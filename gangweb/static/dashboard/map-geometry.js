// The GPU map's geometry, mixed into GpuMap (map.js): where each node and device is drawn, how domains flow
// in rows on the canvas's width, and which device lies under a point. Loaded before map.js.
(function () {
  "use strict";
  const g = window.gangweb;

  const FREE = -1; // a device no gang holds (owner/nominated arrays)
  const GAP = 1;
  g.MAP_FREE = FREE;

  g.mapGeometry = {
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
    },

    layout() {
      this.layoutWanted = false;
      this.pass = null; // a full draw of the old layout: the caller draws the new one
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
      best.width = width;
      this.geom = best;
      this.placeNodes();
      // A new layout keeps the zoom, the view kept inside the map (map-view.js).
      this.viewHeight = null;
      this.sizeCanvas();
      this.clampPan(this.panX, this.panY);
      this.viewTransform();
    },

    planLayout(width, size, domains) {
      const cell = size + GAP;
      const nodeW = this.devCols * cell + 2;
      const nodeH = this.devRows * cell + 2;
      const label = 14; // every rack named, however small its squares
      const margin = size >= 4 ? 10 : 5;
      const blocks = [];
      const rows = []; // the racks side by side: {y, blocks, nodeRows, perNodeRow} (map-raster.js draws by them)
      let x = 0;
      let y = 0;
      let rowH = 0;
      for (const [index, d] of domains.entries()) {
        const perRow = Math.max(1, Math.min(d.count, 8, Math.floor(width / nodeW)));
        const w = perRow * nodeW;
        const nodeRows = Math.ceil(d.count / perRow);
        const h = label + nodeRows * nodeH;
        if (x > 0 && x + w > width) {
          x = 0;
          y += rowH + margin;
          rowH = 0;
        }
        if (x === 0) rows.push({ y, blocks: [], nodeRows: 0, perNodeRow: 0 });
        const block = { x, y, w, h, perRow, first: d.first, count: d.count, name: d.name, label, index };
        const row = rows[rows.length - 1];
        row.blocks.push(block);
        row.nodeRows = Math.max(row.nodeRows, nodeRows);
        row.perNodeRow += perRow;
        blocks.push(block);
        x += w + margin;
        rowH = Math.max(rowH, h);
      }
      return { size, cell, nodeW, nodeH, blocks, rows, labelH: label, height: Math.max(60, y + rowH + 2) };
    },

    nodeOrigin(i) {
      return [this.nodeX[i], this.nodeY[i]];
    },

    placeNodes() {
      this.nodeX = new Float32Array(this.nodes.length);
      this.nodeY = new Float32Array(this.nodes.length);
      for (const b of this.geom.blocks) {
        for (let k = 0; k < b.count; k++) {
          this.nodeX[b.first + k] = b.x + (k % b.perRow) * this.geom.nodeW;
          this.nodeY[b.first + k] = b.y + b.label + Math.floor(k / b.perRow) * this.geom.nodeH;
        }
      }
    },

    // Where device ``slot`` is drawn on the canvas (CSS pixels, at the current zoom and pan): for tests and
    // benches, which read the colour drawn there (``pixel``).
    squareAt(slot) {
      let lo = 0;
      let hi = this.nodes.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (this.start[mid] <= slot) lo = mid;
        else hi = mid - 1;
      }
      const r = this.rect(lo, slot);
      const [x, y] = this.toScreen(r[0], r[1]);
      return { node: lo, x, y, size: r[2] * this.zoom };
    },

    hit(e) {
      if (!this.geom) return null;
      const r = this.canvas.getBoundingClientRect();
      const [x, y] = this.toMap(e.clientX - r.left, e.clientY - r.top);
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
    },
  };
})();
