// A gang page's What if?: the live cluster's plans for this gang with every policy (plans.js).
(function () {
  "use strict";
  const { $, el } = window.gangweb;
  const root = $("gang");
  const podGroup = `${root.dataset.namespace}/${root.dataset.name}`;

  $("run-whatif").addEventListener("click", async () => {
    const button = $("run-whatif");
    button.disabled = true;
    button.textContent = "planning…";
    try {
      window.gangwebPlans.render($("plans"), (await window.gangwebPlans.simulate(podGroup)).plans);
    } catch (exc) {
      $("plans").replaceChildren(el("p", "error", exc.message));
    } finally {
      button.disabled = false;
      button.textContent = "Plan it now with each policy";
    }
  });
})();
