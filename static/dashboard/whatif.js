// /what-if/: a dump (or the live cluster), a gang, the three policies' plans. Nothing is executed.
(function () {
  "use strict";
  const g = window.gangweb;
  const { $, el } = g;
  let useLive = false;

  function error(text) {
    $("error").textContent = text || "";
    $("error").hidden = !text;
  }

  function fillGangs(gangs) {
    const select = $("podgroup");
    select.replaceChildren(new Option(gangs.length ? "pick a gang…" : "no gang in it", ""));
    for (const x of gangs) select.add(new Option(`${x.key} (${x.state}, ${x.priorityClass}, ${g.plural(x.gpus, "GPU")})`, x.key));
    const firstWaiting = gangs.find((x) => x.state !== "running");
    if (firstWaiting) select.value = firstWaiting.key;
  }

  async function ask(withGang) {
    const form = new FormData();
    const file = $("snapshot").files[0];
    if (file && !useLive) form.set("snapshot", file);
    if (withGang) form.set("podGroup", $("podgroup").value);
    const d = await g.postForm(g.urls.whatIf, form);
    error(d.error);
    return d;
  }

  $("snapshot").addEventListener("change", async () => {
    useLive = false;
    const d = await ask(false);
    if (d.gangs) fillGangs(d.gangs);
  });
  $("use-live").addEventListener("click", async () => {
    useLive = true;
    const d = await ask(false);
    if (d.gangs) fillGangs(d.gangs);
  });
  $("lab").addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!$("podgroup").value) return error("pick a gang first");
    $("plan").disabled = true;
    try {
      const d = await ask(true);
      if (d.plans) window.gangwebPlans.render($("plans"), d.plans);
    } catch (exc) {
      error(String(exc));
    } finally {
      $("plan").disabled = false;
    }
  });
})();
