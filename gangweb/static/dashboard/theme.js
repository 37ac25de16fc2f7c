// Loaded in <head>, before the first paint: the chosen theme, else the system's.
(function () {
  var t = localStorage.getItem("gangweb-theme");
  if (t === "light" || t === "dark") document.documentElement.dataset.theme = t;
})();
