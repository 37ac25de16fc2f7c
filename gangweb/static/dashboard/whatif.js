// /what-if/: a dump (or the live cluster), a gang, the three policies' plans. Nothing is executed.
// POST /api/v1/simulate/podgroups/ lists the gangs one may plan, POST /api/v1/simulate/ plans (plans.js).
(function () {
  "use strict";
  const g = window.gangweb;
  const { $ } = g;
  const lab = window.gangwebPlans;
  let useLive = false;

  function error(text) {
    $("error").textContent = text || "";
    $("error").hidden = !text;
  }

  function snapshot() {
    const file = $("snapshot").files[0];
    return file && !useLive ? file : null;
  }

  // The gangs one may plan: those not running (a running gang has nothing to place), in a list the
  // input searches as one types (thousands at 5,000 nodes: no select to scroll).
  let offered = new Set();
  function fillGangs(gangs) {
    const waiting = gangs.filter((x) => x.state !== "running");
    const list = $("podgroup-choices");
    list.replaceChildren(...waiting.map((x) => new Option(`${g.gangState(x.state)}, ${x.priorityClass}, ${g.plural(x.gpus, "GPU")}`, x.podGroup)));
    offered = new Set(waiting.map((x) => x.podGroup));
    $("podgroup").value = waiting.length ? waiting[0].podGroup : "";
    $("podgroup").placeholder = g.words.gangsToPlan(waiting.length, gangs.length - waiting.length);
    $("podgroup-count").textContent = g.words.gangsToPlan(waiting.length, gangs.length - waiting.length);
  }

  async function listGangs() {
    error("");
    try {
      fillGangs((await lab.podGroups(snapshot())).podGroups);
    } catch (exc) {
      error(exc.message);
    }
  }

  $("snapshot").addEventListener("change", () => {
    useLive = false;
    listGangs();
  });
  $("use-live").addEventListener("click", () => {
    useLive = true;
    listGangs();
  });
  $("lab").addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!$("podgroup").value) return error("pick a gang first");
    if (!offered.has($("podgroup").value)) return error(g.words.notOffered($("podgroup").value));
    error("");
    $("plan").disabled = true;
    try {
      lab.render($("plans"), (await lab.simulate($("podgroup").value, snapshot())).plans);
    } catch (exc) {
      error(exc.message);
    } finally {
      $("plan").disabled = false;
    }
  });
})();
