// The agent's-view page: the slider picks one of the agent's model calls; moving it
// names the call, letting it go opens that call's view (the list and the buttons do the
// same without a script).
(function () {
  "use strict";
  // The transcript opens at the call, with what came just before it in view.
  const marker = document.getElementById("call-marker");
  if (marker) {
    const box = marker.closest(".transcript");
    box.scrollTop = Math.max(0, marker.offsetTop - box.offsetTop - box.clientHeight / 2);
  }
  const slider = document.getElementById("call-slider");
  if (!slider) return;
  const events = slider.dataset.events.split(",");
  const labels = slider.dataset.labels.split("|");
  const number = document.getElementById("call-number");
  const select = document.getElementById("at");
  function show() {
    const i = Number(slider.value);
    number.textContent = String(i + 1);
    slider.setAttribute("aria-valuetext", "call " + (i + 1) + ", " + labels[i]);
    if (select) select.value = events[i];
  }
  slider.addEventListener("input", show);
  slider.addEventListener("change", function () {
    show();
    const url = new URL(window.location.href);
    url.searchParams.set("at", events[Number(slider.value)]);
    window.location.assign(url.toString());
  });
})();
