// gangweb preemption timeline: cards rendered by the server (templates/dashboard/_timeline_request.html)
// and kept live. cluster.js re-dispatches every websocket message as a "gangweb:message" DOM event;
// when one names a preemption request, that request's card is fetched again from
// /timeline/requests/<id>/ and swapped in (or added on top), so the page and the live updates are
// drawn by the same template. Fetches are coalesced: an eviction burst of 256 pods costs a few.
(function () {
  "use strict";

  const MAX_CARDS = 30;
  const COALESCE_MS = 300;
  const section = document.getElementById("timeline");
  if (!section) return;
  const list = document.getElementById("timeline-list");
  const empty = document.getElementById("timeline-empty");
  const cardUrl = (id) => section.dataset.cardUrl.replace(/0\/$/, `${id}/`);
  const wanted = new Map(); // request id -> "scheduled" | "fetching" | "again"

  function schedule(id) {
    const now = wanted.get(id);
    if (now === "scheduled" || now === "again") return;
    if (now === "fetching") { wanted.set(id, "again"); return; }
    wanted.set(id, "scheduled");
    setTimeout(() => refresh(id), COALESCE_MS);
  }

  async function refresh(id) {
    wanted.set(id, "fetching");
    try {
      const response = await fetch(cardUrl(id), { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (response.ok) place(id, await response.text());
    } catch (e) {
      // The next event for this request, or the next reconnect, fetches it again.
    } finally {
      const again = wanted.get(id) === "again";
      wanted.delete(id);
      if (again) schedule(id);
    }
  }

  function place(id, html) {
    const holder = document.createElement("template");
    holder.innerHTML = html.trim();
    const card = holder.content.firstElementChild;
    if (!card) return;
    const old = list.querySelector(`[data-request="${CSS.escape(String(id))}"]`);
    if (old) {
      // Keep an opened history open while it grows.
      const details = card.querySelector("details");
      if (details && old.querySelector("details[open]")) details.open = true;
      old.replaceWith(card);
    } else {
      insertByNewest(card);
    }
    card.classList.add("fresh");
    while (list.children.length > MAX_CARDS) list.lastElementChild.remove();
    empty.hidden = list.children.length > 0;
    window.gangwebTimelineUpdates = (window.gangwebTimelineUpdates || 0) + 1;
  }

  function insertByNewest(card) {
    const id = Number(card.dataset.request);
    for (const other of list.children) {
      if (Number(other.dataset.request) < id) { list.insertBefore(card, other); return; }
    }
    list.appendChild(card);
  }

  document.addEventListener("gangweb:message", (ev) => {
    const message = ev.detail || {};
    const id = message.payload && message.payload.request;
    if (Number.isInteger(id) && id > 0) schedule(id);
  });

  // After a reconnect, events may have been missed (requests opened, evictions finished): take the
  // latest cards afresh, keeping the histories someone had opened.
  async function reloadAll() {
    try {
      const response = await fetch(section.dataset.listUrl, { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (!response.ok) return;
      const holder = document.createElement("template");
      holder.innerHTML = (await response.text()).trim();
      const open = new Set(Array.from(list.querySelectorAll(".tl-request"))
        .filter((card) => card.querySelector("details[open]")).map((card) => card.dataset.request));
      for (const card of holder.content.querySelectorAll(".tl-request")) {
        const details = card.querySelector("details");
        if (details && open.has(card.dataset.request)) details.open = true;
      }
      list.replaceChildren(...holder.content.children);
      empty.hidden = list.children.length > 0;
    } catch (e) {
      // Still offline: the next reconnect tries again.
    }
  }

  let connectedOnce = false;
  document.addEventListener("gangweb:live", () => {
    if (connectedOnce) reloadAll();
    connectedOnce = true;
  });
})();
