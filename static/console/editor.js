// The scenario editor: one file shown at a time, line numbers, and a check of the whole
// package as you type (debounced), with each problem beside the line it points at.
(function () {
  "use strict";
  var form = document.getElementById("editor");
  if (!form) { return; }
  var url = form.getAttribute("data-validate-url");
  var panes = Array.prototype.slice.call(form.querySelectorAll(".pane"));
  var links = Array.prototype.slice.call(form.querySelectorAll(".files a[data-file]"));
  var summary = document.getElementById("summary");
  var byPath = {};
  var problems = {};  // pane index -> [{line, path, message}]
  var timer = null;
  var sequence = 0;

  panes.forEach(function (pane) {
    var index = pane.getAttribute("data-index");
    var path = pane.querySelector("input[name=path]").value;
    byPath[path] = pane;
    var area = pane.querySelector("textarea");
    area.addEventListener("input", function () { drawGutter(pane); schedule(); });
    area.addEventListener("scroll", function () {
      pane.querySelector(".gutter").scrollTop = area.scrollTop;
    });
    problems[index] = [];
    drawGutter(pane);
  });

  function show(index) {
    panes.forEach(function (pane) {
      pane.hidden = pane.getAttribute("data-index") !== String(index);
    });
    links.forEach(function (link) {
      if (link.getAttribute("data-file") === String(index)) {
        link.setAttribute("aria-current", "true");
      } else {
        link.removeAttribute("aria-current");
      }
    });
  }

  links.forEach(function (link) {
    link.addEventListener("click", function (event) {
      event.preventDefault();
      show(link.getAttribute("data-file"));
      var pane = form.querySelector("#file-" + link.getAttribute("data-file"));
      pane.querySelector("textarea").focus();
    });
  });

  function drawGutter(pane) {
    var area = pane.querySelector("textarea");
    var gutter = pane.querySelector(".gutter");
    var count = area.value.split("\n").length;
    var bad = {};
    (problems[pane.getAttribute("data-index")] || []).forEach(function (p) {
      if (p.line) { bad[p.line] = true; }
    });
    gutter.textContent = "";
    for (var n = 1; n <= count; n += 1) {
      var span = document.createElement("span");
      span.textContent = String(n);
      if (bad[n]) { span.className = "bad"; }
      gutter.appendChild(span);
      gutter.appendChild(document.createTextNode("\n"));
    }
    gutter.scrollTop = area.scrollTop;
  }

  function goToLine(pane, line) {
    var index = pane.getAttribute("data-index");
    show(index);
    var area = pane.querySelector("textarea");
    var lines = area.value.split("\n");
    var start = 0;
    for (var i = 0; i < line - 1 && i < lines.length; i += 1) { start += lines[i].length + 1; }
    var end = start + (lines[line - 1] || "").length;
    area.focus();
    area.setSelectionRange(start, end);
  }

  function describe(p, withFile) {
    var text = "";
    if (withFile && p.file) { text += p.file + (p.line ? ", line " + p.line : "") + ": "; }
    if (!withFile && p.line) { text += "line " + p.line + ": "; }
    if (p.path) { text += p.path + ": "; }
    return text + p.message;
  }

  function item(p, withFile) {
    var li = document.createElement("li");
    var pane = byPath[p.file];
    if (pane && p.line) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "linklike";
      button.textContent = describe(p, withFile);
      button.addEventListener("click", function () { goToLine(pane, p.line); });
      li.appendChild(button);
    } else {
      li.textContent = describe(p, withFile);
    }
    return li;
  }

  function render(errors) {
    Object.keys(problems).forEach(function (k) { problems[k] = []; });
    errors.forEach(function (p) {
      var pane = byPath[p.file];
      if (pane) { problems[pane.getAttribute("data-index")].push(p); }
    });
    panes.forEach(function (pane) {
      var index = pane.getAttribute("data-index");
      var list = pane.querySelector(".file-problems");
      list.textContent = "";
      problems[index].forEach(function (p) { list.appendChild(item(p, false)); });
      var count = form.querySelector("[data-count-for='" + index + "']");
      count.textContent = problems[index].length ? "(" + problems[index].length + ")" : "";
      count.className = problems[index].length ? "count error" : "count";
      drawGutter(pane);
    });
    summary.textContent = "";
    var head = document.createElement("p");
    if (errors.length) {
      head.className = "error";
      head.textContent = errors.length + (errors.length === 1 ? " problem" : " problems") +
        "; Save is refused until they are fixed.";
      summary.appendChild(head);
      var list = document.createElement("ul");
      list.className = "problems";
      errors.forEach(function (p) { list.appendChild(item(p, true)); });
      summary.appendChild(list);
    } else {
      head.className = "ok";
      head.textContent = "No problems: the package loads.";
      summary.appendChild(head);
    }
  }

  function check() {
    var mine = ++sequence;
    fetch(url, { method: "POST", body: new FormData(form), credentials: "same-origin",
                 headers: { "Accept": "application/json" } })
      .then(function (response) {
        return response.json().then(function (body) { return { status: response.status, body: body }; });
      })
      .then(function (result) {
        if (mine !== sequence) { return; }  // a newer check is on its way
        if (result.status !== 200) {
          render([{ file: "", line: null, path: "", message: result.body.error || "the check failed" }]);
          return;
        }
        render(result.body.errors);
      })
      .catch(function () {
        if (mine !== sequence) { return; }
        summary.textContent = "The check could not reach the server; Save still checks.";
      });
  }

  function schedule() {
    if (timer) { clearTimeout(timer); }
    timer = setTimeout(check, 400);
  }

  // After a refused save, open the first file with a problem; else the one the address
  // names, else the first.
  var named = location.hash.match(/^#file-(\d+)$/);
  var bad = form.querySelector(".file-problems li");
  var start = panes[0] && panes[0].getAttribute("data-index");
  if (bad) {
    start = bad.closest(".pane").getAttribute("data-index");
  } else if (named) {
    start = named[1];
  }
  show(start);
  if (bad) { check(); }  // the same problems again, now with links to their lines
})();
