// The home page polls its live part every two seconds. An answer identical to the one
// on the page is not swapped in: the counters' live region then speaks only on change,
// and a reader's focus or selection inside the tables is not thrown away.
(function () {
  "use strict";
  var live = document.getElementById("home-live");
  if (!live) { return; }
  var last = null;
  live.addEventListener("htmx:beforeSwap", function (event) {
    var text = event.detail.xhr.responseText;
    if (event.detail.xhr.status !== 200 || text === last) {
      event.detail.shouldSwap = false;
      return;
    }
    last = text;
  });
})();
