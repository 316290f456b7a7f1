// A Scribe session's page: send a message, show the reply line by line as the server
// streams it (NDJSON, one {kind, text, name} per line), and refresh the draft beside the
// chat when Scribe writes to it and when the reply ends. Everything shown is also stored
// in the session, so a reload rebuilds the same page.
(function () {
  "use strict";
  var root = document.getElementById("assist");
  if (!root) { return; }
  var form = document.getElementById("composer");
  var area = document.getElementById("message-text");
  var send = document.getElementById("send");
  var lines = document.getElementById("lines");
  var working = document.getElementById("working");
  var problem = document.getElementById("composer-problem");
  var draft = document.getElementById("draft");
  var draftUrl = root.getAttribute("data-draft-url");
  var refreshTimer = null;
  var WHO = { user: "You", text: "Scribe", tool: "Tool", question: "Scribe asks" };
  var WRITES = { write_draft_file: true, delete_draft_file: true, propose_draft: true };

  function who(line) {
    if (line.kind === "draft") { return "Proposed " + line.name; }
    if (line.kind === "error") { return "Problem" + (line.name ? " (" + line.name + ")" : ""); }
    return WHO[line.kind] || line.kind;
  }

  function append(line) {
    var empty = document.getElementById("no-lines");
    if (empty) { empty.remove(); }
    var li = document.createElement("li");
    li.className = "line line-" + line.kind;
    var label = document.createElement("span");
    label.className = "who";
    label.textContent = who(line);
    var said = document.createElement("div");
    said.className = "said";
    if (line.kind === "tool") {
      var code = document.createElement("code");
      code.textContent = line.text;
      said.appendChild(code);
    } else {
      said.textContent = line.text;
    }
    if (line.kind === "draft") {
      var hint = document.createElement("span");
      hint.className = "hint";
      hint.textContent = " Review each file's changes beside the chat, then approve.";
      said.appendChild(hint);
    }
    li.appendChild(label);
    li.appendChild(said);
    lines.appendChild(li);
    li.scrollIntoView({ block: "nearest" });
    return li;
  }

  // Each refresh, and each request the panel itself makes (Validate), takes a number; a
  // refresh answered after a newer one began is dropped, so it never paints over a check.
  var drawn = 0;
  draft.addEventListener("htmx:beforeRequest", function () { drawn += 1; });

  function refreshDraft() {
    var mine = ++drawn;
    return fetch(draftUrl, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null || mine !== drawn) { return; }
        draft.innerHTML = html;
        if (window.htmx) { window.htmx.process(draft); }
      })
      .catch(function () { /* the next refresh, or a reload, shows it */ });
  }

  function soon() {
    if (refreshTimer) { clearTimeout(refreshTimer); }
    refreshTimer = setTimeout(refreshDraft, 300);
  }

  function busy(on) {
    send.disabled = on;
    area.readOnly = on;
    working.hidden = !on;
  }

  function finished(state) {
    busy(false);
    refreshDraft();
    if (state === "capped" || state === "approved") {
      form.hidden = true;
      document.getElementById(state === "capped" ? "capped-note" : "approved-note").hidden = false;
    } else {
      area.focus();
    }
  }

  function read(response) {
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    var state = null;
    function handle(text) {
      if (!text.trim()) { return; }
      var line;
      try { line = JSON.parse(text); } catch (e) {
        append({ kind: "error", name: "", text: "An unreadable line came from the server." });
        return;
      }
      if (line.kind === "done") { state = line.text; return; }
      append(line);
      if (line.kind === "tool" && WRITES[line.name]) { soon(); }
    }
    function pump() {
      return reader.read().then(function (chunk) {
        if (chunk.done) {
          handle(buffer);
          if (state === null) {
            append({ kind: "error", name: "connection", text: "The reply was cut off before it ended. Reload the page: the session keeps everything said so far." });
          }
          finished(state);
          return;
        }
        buffer += decoder.decode(chunk.value, { stream: true });
        var parts = buffer.split("\n");
        buffer = parts.pop();
        parts.forEach(handle);
        return pump();
      });
    }
    return pump();
  }

  function submit() {
    var text = area.value.trim();
    problem.textContent = "";
    if (!text) { problem.textContent = "Write a message first."; area.focus(); return; }
    var body = new FormData(form);
    body.set("text", text);
    var mine = append({ kind: "user", text: text, name: "" });
    area.value = "";
    busy(true);
    fetch(form.getAttribute("action"), {
      method: "POST", body: body, credentials: "same-origin",
      headers: { "Accept": "application/x-ndjson" }
    }).then(function (response) {
      if (!response.ok) {
        return response.json().catch(function () { return {}; }).then(function (answer) {
          mine.remove();
          area.value = text;
          busy(false);
          problem.textContent = "Not sent: " + (answer.error || ("the server answered " + response.status)) + ".";
          area.focus();
        });
      }
      return read(response);
    }).catch(function () {
      append({ kind: "error", name: "connection", text: "The server could not be reached. Reload the page: the session keeps everything said so far." });
      busy(false);
    });
  }

  // A link to a file (from the file list or a problem) opens it where it is folded.
  draft.addEventListener("click", function (event) {
    var link = event.target.closest("a[href^='#draft-file-']");
    if (!link) { return; }
    var target = document.getElementById(link.getAttribute("href").slice(1));
    if (target && target.tagName === "DETAILS") { target.open = true; }
  });

  form.addEventListener("submit", function (event) { event.preventDefault(); submit(); });
  area.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (!send.disabled) { submit(); }
    }
  });
  var last = lines.lastElementChild;
  if (last) { last.scrollIntoView({ block: "nearest" }); }
})();
