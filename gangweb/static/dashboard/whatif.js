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

  function fillGangs(gangs) {
    const select = $("podgroup");
    select.replaceChildren(new Option(gangs.length ? "pick a gang…" : "no gang in it that you may plan", ""));
    for (const x of gangs) select.add(new Option(`${x.podGroup} (${g.gangState(x.state)}, ${x.priorityClass}, ${g.plural(x.gpus, "GPU")})`, x.podGroup));
    const firstWaiting = gangs.find((x) => x.state !== "running");
    if (firstWaiting) select.value = firstWaiting.podGroup;
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
