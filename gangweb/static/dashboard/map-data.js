// The GPU map's picture (GET /api/v1/map/) turned into what the map draws from: typed arrays per device and
// per node, and the node names; one object per node is not kept. In the page (the overview loads this file
// async from its <head>, ``data-map`` naming map/) it asks for map/ at once (the request the page preloads)
// and hands the bytes to a worker running this same file (the URL the page has just loaded: nothing more to
// fetch from a busy server), which parses them and makes the arrays off the page's main thread: parsing
// 5 MB at 20,000 nodes and walking its nodes there took one task of up to a second. map.js draws the result.
(function () {
  "use strict";
  const FREE = -1; // a device no gang holds (map-geometry.js's MAP_FREE)

  // ``picture`` without its ``nodes`` (``rest``), and per node and device what GpuMap keeps.
  // The page's side: the worker (started at once; ``false`` where none runs or it failed: the page parses),
  // and ``fetchPicture``, whose first call for ``data-map`` takes the request already under way.
  const WORKER_BYTES = 2 * 1024 * 1024;

  function inPage(script) {
    let worker = null;
    let asked = 0;
    const waiting = new Map(); // request id -> {resolve, reject, gangs, names}

    function startWorker() {
      if (worker !== null) return worker;
      worker = false;
      if (!script || !script.src || !self.Worker) return worker;
      try {
        worker = new Worker(script.src);
      } catch (_) {
        return (worker = false);
      }
      worker.onmessage = (e) => {
        const m = e.data;
        const w = waiting.get(m.id);
        if (!w) return;
        if (m.gangs) for (const row of m.gangs) w.gangs.push(row);
        else if (m.names) w.names = m.names;
        else {
          waiting.delete(m.id);
          if (m.error) return w.reject(new Error(m.error));
          performance.mark("map-parsed");
          m.compact.rest.gangs = w.gangs;
          m.compact.names = w.names;
          w.resolve(m.compact);
        }
      };
      worker.onerror = (e) => {
        e.preventDefault();
        worker = false;
        for (const w of waiting.values()) w.reject(Object.assign(new Error("the map's worker failed"), { worker: true }));
        waiting.clear();
      };
      return worker;
    }

    async function load(url) {
      // Same URL, mode and credentials as the page's preload, which this request takes over.
      const answer = await fetch(url, { credentials: "include", mode: "cors" });
      if (!answer.ok) throw Object.assign(new Error(`${url}: HTTP ${answer.status}`), { status: answer.status });
      const bytes = await answer.arrayBuffer();
      performance.mark("map-bytes");
      // A picture under 2 MB (5,000 nodes: 1.3 MB) is parsed here, a task of ~20 ms: on a busy machine the
      // worker's thread waited for a core longer than that (0.04-0.8 s measured); a larger one in the worker.
      const w = bytes.byteLength >= WORKER_BYTES ? startWorker() : false;
      if (!w) return compactPicture(JSON.parse(new TextDecoder().decode(bytes)));
      try {
        return await new Promise((resolve, reject) => {
          const id = ++asked;
          waiting.set(id, { resolve, reject, gangs: [], names: null });
          w.postMessage({ id, bytes }, [bytes]);
        });
      } catch (error) {
        if (!error.worker) throw error;
        return load(url); // the worker failed: again, parsed here
      }
    }

    performance.mark("map-asked");
    const early = { url: script && script.dataset.map, picture: null };
    if (early.url) {
      startWorker();
      early.picture = load(early.url);
      early.picture.catch(() => {}); // its taker reports a failure
    }
    function fetchPicture(url) {
      const taken = url === early.url ? early.picture : null;
      early.picture = null;
      return taken || load(url);
    }
    return { fetchPicture };
  }

  function compactPicture(picture) {
    const nodes = picture.nodes;
    const n = nodes.length;
    const start = new Int32Array(n + 1);
    let total = 0;
    for (let i = 0; i < n; i++) {
      start[i] = total;
      total += nodes[i].gpus.length;
    }
    start[n] = total;
    const owner = new Int32Array(total);
    const nominated = new Int32Array(total).fill(FREE);
    const dra = new Uint8Array(total);
    const cordoned = new Uint8Array(n);
    const domainOf = new Int32Array(n);
    const names = new Array(n);
    // Each device gets a cell of its node's grid; the MIG partitions of one GPU share its cell (drawn as
    // sub-squares). Without MIG a device's cell is its index on the node.
    const cellOf = new Int16Array(total);
    const partOf = new Uint8Array(total);
    const partsOf = new Uint8Array(total).fill(1);
    let devName = null; // what a DRA ResourceSlice names each device, where one does
    let mig = null; // [parent GPU index, profile] of a MIG partition
    let maxCells = 1;
    let anyMig = false;
    for (let i = 0; i < n; i++) {
      const node = nodes[i];
      const s0 = start[i];
      const gpus = node.gpus;
      names[i] = node.name;
      domainOf[i] = node.domain;
      cordoned[i] = node.cordoned || !node.ready ? 1 : 0;
      for (let j = 0; j < gpus.length; j++) owner[s0 + j] = gpus[j] === null ? FREE : gpus[j];
      const nom = node.nominated;
      if (nom) for (let j = 0; j < nom.length; j++) nominated[s0 + j] = nom[j] === null ? FREE : nom[j];
      const d = node.dra;
      if (d) for (let j = 0; j < d.length; j++) dra[s0 + j] = d[j] ? 1 : 0;
      if (node.devices) {
        devName = devName || new Array(total).fill(null);
        for (let j = 0; j < gpus.length; j++) devName[s0 + j] = node.devices[j] || null;
      }
      let cells = gpus.length;
      if (node.mig && node.mig.some((m) => m)) {
        mig = mig || new Array(total).fill(null);
        anyMig = true;
        const parents = new Map(); // parent GPU index -> [cell, slots]
        cells = 0;
        for (let j = 0; j < gpus.length; j++) {
          const s = s0 + j;
          const m = node.mig[j];
          if (m) {
            mig[s] = m;
            let group = parents.get(m[0]);
            if (!group) parents.set(m[0], (group = [cells++, []]));
            cellOf[s] = group[0];
            partOf[s] = group[1].length;
            group[1].push(s);
          } else cellOf[s] = cells++;
        }
        for (const [, slots] of parents.values()) for (const s of slots) partsOf[s] = slots.length;
      } else for (let j = 0; j < gpus.length; j++) cellOf[s0 + j] = j;
      if (cells > maxCells) maxCells = cells;
    }
    const rest = {};
    for (const key of Object.keys(picture)) if (key !== "nodes") rest[key] = picture[key];
    return {
      rest, names, arrays: { start, owner, nominated, dra, cordoned, domainOf, cellOf, partOf, partsOf },
      devName, mig, maxCells, anyMig,
    };
  }

  const inWorker = typeof WorkerGlobalScope !== "undefined" && self instanceof WorkerGlobalScope;
  if (!inWorker) {
    self.gangwebMapData = { compactPicture, FREE, ...inPage(document.currentScript) };
    return;
  }

  // In the worker: map/'s bytes in; out, the gang rows in parts of 1,000 (the page reads each in a task of
  // its own: 10,000 rows copied in one message were one long task), the node names, then the arrays.
  const PART = 1000;
  self.onmessage = (event) => {
    const { id, bytes } = event.data;
    try {
      const compact = compactPicture(JSON.parse(new TextDecoder().decode(bytes)));
      const gangs = compact.rest.gangs || [];
      compact.rest.gangs = null;
      for (let i = 0; i < gangs.length; i += PART) self.postMessage({ id, gangs: gangs.slice(i, i + PART) });
      self.postMessage({ id, names: compact.names });
      compact.names = null;
      self.postMessage({ id, compact }, Object.values(compact.arrays).map((a) => a.buffer));
    } catch (error) {
      self.postMessage({ id, error: String(error && error.message ? error.message : error) });
    }
  };
})();
