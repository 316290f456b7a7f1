// The realm page, live: one websocket brings what happens after the page was rendered
// (payloads are described in realms/console/feed.py); a reconnect says what it has seen.
(function () {
  "use strict";

  var data = JSON.parse(document.getElementById("realm-data").textContent);
  var TERMINAL = { archived: 1, failed: 1, interrupted: 1 };
  var HIDDEN = { spend: 1, trace: 1, key: 1, tool_manifest: 1 };
  var FINAL_CODES = { 4400: 1, 4403: 1, 4404: 1 };
  // Events up to this id are in the page already (cards, charts, timeline).
  var renderedUpTo = data.after_event;
  var lastEvent = data.after_event;
  var lastTs = data.after_ts;
  var state = data.state;

  var transcript = document.getElementById("transcript");
  var transcriptBox = document.getElementById("transcript-box");
  var timeline = document.getElementById("timeline");
  var timelineBox = document.getElementById("timeline-box");
  var pill = document.getElementById("new-messages");
  var liveStatus = document.getElementById("live-status");
  var stateBadge = document.getElementById("realm-state");
  var turnLine = document.getElementById("realm-turn");
  var outcome = document.getElementById("realm-outcome");

  var seenMessages = new Set();
  var seenEvents = new Set();
  var seenSpend = new Set();
  var filter = "all";
  var colours = {};
  var caps = {};
  data.agents.forEach(function (a) { colours[a.id] = a.colour; caps[a.id] = a.cap; });

  function scanTranscript() {
    transcript.querySelectorAll("li.msg").forEach(function (li) {
      seenMessages.add(li.dataset.eventId);
      applyFilter(li);
    });
  }
  timeline.querySelectorAll("li.ev").forEach(function (li) { seenEvents.add(Number(li.dataset.id)); });

  function clock(ts) {
    return new Date(ts).toISOString().slice(11, 19);
  }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;  // agent text is only ever text
    return node;
  }

  // --- transcript -----------------------------------------------------------------

  function atBottom(box) {
    return box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  }

  function visible(li) {
    if (filter === "all") return true;
    if (filter === "referee") return li.dataset.agent === data.referee;
    return li.dataset.channel === filter;
  }

  function applyFilter(li) {
    li.hidden = !visible(li);
  }

  function addMessage(p) {
    if (seenMessages.has(p.event_id)) return;
    seenMessages.add(p.event_id);
    if (p.ts > lastTs) lastTs = p.ts;
    var channel = data.channels[p.channel] || { label: p.channel, private: false };
    var colour = colours[p.agent];
    var li = el("li", "msg" + (colour === undefined ? " platform" : " agent-" + colour) +
      (channel.private ? " private" : ""));
    li.dataset.eventId = p.event_id;
    li.dataset.channel = p.channel;
    li.dataset.agent = p.agent;
    var head = el("div", "msg-head");
    head.appendChild(el("span", "who", p.who || p.agent || p.sender));
    head.appendChild(document.createTextNode(" "));
    head.appendChild(el("span", "chan", channel.label + (channel.private ? " · private" : "")));
    head.appendChild(document.createTextNode(" "));
    var time = el("time", "muted", clock(p.ts));
    time.dataset.ts = p.ts;
    head.appendChild(time);
    li.appendChild(head);
    li.appendChild(el("div", "msg-body", p.body));
    applyFilter(li);
    var empty = transcript.querySelector("li.empty");
    if (empty) empty.remove();
    transcript.appendChild(li);
    if (stick) {
      transcriptBox.scrollTop = transcriptBox.scrollHeight;
    } else if (!li.hidden) {
      pill.hidden = false;
    }
  }

  // Follow the newest message until the reader scrolls up; then offer the way back.
  var stick = true;
  transcriptBox.addEventListener("scroll", function () {
    stick = atBottom(transcriptBox);
    if (stick) pill.hidden = true;
  });
  pill.addEventListener("click", function () {
    transcriptBox.scrollTop = transcriptBox.scrollHeight;
    pill.hidden = true;
    transcriptBox.focus();
  });
  function choose(e) {
    var chip = e.currentTarget;
    filter = chip.dataset.filter;
    document.querySelectorAll(".channel-filter .chip").forEach(function (other) {
      other.setAttribute("aria-pressed", String(other === chip));
    });
    transcript.querySelectorAll("li.msg").forEach(applyFilter);
    transcriptBox.scrollTop = transcriptBox.scrollHeight;
  }
  document.querySelectorAll(".channel-filter .chip").forEach(function (chip) {
    chip.addEventListener("click", choose);
  });
  // "Show earlier" swaps older rows in: keep the reader's place and learn their ids.
  document.body.addEventListener("htmx:beforeSwap", function (e) {
    if (transcript.contains(e.detail.target)) transcript.dataset.keep = String(transcriptBox.scrollHeight - transcriptBox.scrollTop);
  });
  document.body.addEventListener("htmx:afterSettle", function () {
    if (transcript.dataset.keep) {
      transcriptBox.scrollTop = transcriptBox.scrollHeight - Number(transcript.dataset.keep);
      delete transcript.dataset.keep;
      scanTranscript();
    }
  });

  // --- agents, turn, state ---------------------------------------------------------

  function card(agent) {
    return document.querySelector('.agent-card[data-agent="' + CSS.escape(agent) + '"]');
  }

  function setField(agent, field, text) {
    var c = card(agent);
    var node = c && c.querySelector('[data-field="' + field + '"]');
    if (node) node.textContent = text;
    return c;
  }

  function markOut(agent, why) {
    var c = setField(agent, "state", why);
    if (c) c.classList.add("out");
  }

  function setSpend(agent, cumulative) {
    var c = setField(agent, "spend", "$" + cumulative.toFixed(4));
    var cap = caps[agent];
    var bar = c && c.querySelector(".bar");
    if (!bar || !cap) return;
    var pct = Math.max(0, Math.min(100, Math.round(100 * cumulative / cap)));
    bar.setAttribute("aria-valuenow", String(pct));
    bar.firstElementChild.style.width = pct + "%";
    bar.classList.toggle("full", pct >= 100);
    bar.classList.toggle("high", pct >= 80 && pct < 100);
  }

  var scores = {};
  Object.keys(data.charts.score).forEach(function (agent) {
    var points = data.charts.score[agent];
    scores[agent] = points.length ? points[points.length - 1][1] : 0;
  });

  function showTurn(p) {
    if (p.round === undefined || p.round === null) return;
    turnLine.textContent = "";
    turnLine.appendChild(document.createTextNode("Round "));
    turnLine.appendChild(el("strong", "", String(p.round)));
    if (p.current) {
      turnLine.appendChild(document.createTextNode(" · "));
      turnLine.appendChild(el("strong", "", p.current));
      turnLine.appendChild(document.createTextNode("’s turn"));
    }
  }

  // Agents' own states are rows, not events: what a realm state implies for them.
  function agentsFollow(next) {
    document.querySelectorAll(".agent-card:not(.out) [data-field=state]").forEach(function (n) {
      if (next === "running" && n.textContent === "pending") n.textContent = "running";
      if (TERMINAL[next] && n.textContent !== "failed") n.textContent = "stopped";
    });
  }

  // A page opened before the realm ran learns its rooms from the running event.
  function learnChannels(q) {
    var rooms = {};
    if (q.commons_room) rooms[q.commons_room] = { label: "commons", private: false };
    Object.keys(q.side_channels || {}).forEach(function (room) {
      rooms[room] = { label: String(q.side_channels[room]), private: true };
    });
    var bar = document.querySelector(".channel-filter");
    var anchor = bar.querySelector('[data-filter="referee"]');
    Object.keys(rooms).forEach(function (room) {
      if (data.channels[room]) return;
      data.channels[room] = rooms[room];
      var chip = el("button", "chip", rooms[room].label);
      chip.type = "button";
      chip.dataset.filter = room;
      chip.setAttribute("aria-pressed", "false");
      if (rooms[room].private) chip.appendChild(el("span", "lock", " (private)"));
      chip.addEventListener("click", choose);
      bar.insertBefore(chip, anchor);
      transcript.querySelectorAll("li.msg").forEach(function (li) {
        if (li.dataset.channel !== room) return;
        li.querySelector(".chan").textContent = rooms[room].label + (rooms[room].private ? " · private" : "");
        li.classList.toggle("private", rooms[room].private);
      });
    });
  }

  function setState(next) {
    if (next === state) return;
    state = next;
    agentsFollow(next);
    stateBadge.textContent = next;
    stateBadge.className = "badge state-" + next;
    if (TERMINAL[next]) liveStatus.textContent = "ended";
    document.body.dispatchEvent(new CustomEvent("bearpit:state", { detail: { state: next } }));
  }

  // --- timeline ----------------------------------------------------------------

  function addEvent(p) {
    if (p.id > lastEvent) lastEvent = p.id;
    if (seenEvents.has(p.id) || p.id <= renderedUpTo) return;
    seenEvents.add(p.id);
    if (HIDDEN[p.event_kind]) return;
    var li = el("li", "ev ev-" + p.event_kind);
    li.dataset.id = p.id;
    var time = el("time", "muted", clock(p.ts));
    time.dataset.ts = p.ts;
    li.appendChild(time);
    li.appendChild(document.createTextNode(" "));
    li.appendChild(el("span", "ev-kind", p.event_kind));
    li.appendChild(document.createTextNode(" "));
    li.appendChild(el("span", "ev-text", p.summary));
    var follow = atBottom(timelineBox);
    timeline.appendChild(li);
    if (follow) timelineBox.scrollTop = timelineBox.scrollHeight;
    react(p);
  }

  function react(p) {
    var q = p.payload || {};
    if (p.event_kind === "lifecycle" && q.event === "running") {
      if (!data.charts.start) data.charts.start = p.ts;
      learnChannels(q);
    } else if (p.event_kind === "turn") {
      showTurn(q);
    } else if (p.event_kind === "score" && typeof q.delta === "number" && q.agent) {
      scores[q.agent] = (scores[q.agent] || 0) + q.delta;
      setField(q.agent, "score", String(Math.round(scores[q.agent] * 100) / 100));
      addPoint(scoreChart, q.agent, p.ts, scores[q.agent]);
    } else if (p.event_kind === "elimination" && q.agent) {
      markOut(q.agent, "eliminated");
    } else if (p.event_kind === "lifecycle" && q.event === "budget_exhausted" && q.agent) {
      markOut(q.agent, "starved");
    } else if (p.event_kind === "lifecycle" && q.event === "agent_killed" && q.agent) {
      markOut(q.agent, "killed");
    } else if (p.event_kind === "verdict" && q.outcome) {
      outcome.hidden = false;
      outcome.className = "banner ok";
      outcome.textContent = "";
      outcome.appendChild(el("strong", "", "Verdict: "));
      outcome.appendChild(document.createTextNode(String(q.outcome)));
    }
  }

  function addSpend(p) {
    if (p.id > lastEvent) lastEvent = p.id;
    if (seenSpend.has(p.id) || p.id <= renderedUpTo) return;
    seenSpend.add(p.id);
    setSpend(p.agent, p.cumulative);
    addPoint(spendChart, p.agent, p.ts, p.cumulative);
  }

  // --- charts --------------------------------------------------------------------

  function agentColour(agent) {
    var slot = colours[agent];
    var name = slot === undefined ? "--ink-soft" : "--agent-" + slot;
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#555";
  }

  // uPlot wants one x axis for every series: each series steps from point to point.
  function aligned(points) {
    var agents = Object.keys(points);
    var xs = new Set();
    agents.forEach(function (a) { points[a].forEach(function (pt) { xs.add(pt[0]); }); });
    // Every line starts from nothing when the realm started (or at its first point).
    if (xs.size) xs.add(Math.min.apply(null, [data.charts.start || Infinity].concat(Array.from(xs))));
    var x = Array.from(xs).sort(function (a, b) { return a - b; });
    var out = [x.map(function (t) { return t / 1000; })];
    agents.forEach(function (a) {
      var i = 0, last = 0, ys = [];
      x.forEach(function (t) {
        while (i < points[a].length && points[a][i][0] <= t) { last = points[a][i][1]; i++; }
        ys.push(last);
      });
      out.push(ys);
    });
    return { agents: agents, data: out };
  }

  function makeChart(id, points, label) {
    var box = document.getElementById(id);
    var chart = { box: box, points: points, label: label, plot: null, pending: false };
    draw(chart);
    return chart;
  }

  function draw(chart) {
    if (typeof uPlot === "undefined") return;
    var built = aligned(chart.points);
    if (chart.plot && chart.plot.series.length === built.agents.length + 1) {
      chart.plot.setData(built.data);
      return;
    }
    if (chart.plot) chart.plot.destroy();
    var series = [{}].concat(built.agents.map(function (a) {
      return { label: a, stroke: agentColour(a), width: 2, paths: uPlot.paths.stepped({ align: 1 }) };
    }));
    chart.plot = new uPlot({
      width: Math.max(240, chart.box.clientWidth),
      height: 180,
      series: series,
      scales: { x: { time: true } },
      axes: [{}, { label: chart.label, size: 60 }],
      legend: { live: false },
    }, built.data, chart.box);
  }

  function addPoint(chart, agent, ts, value) {
    if (!chart.points[agent]) chart.points[agent] = [];
    chart.points[agent].push([ts, value]);
    if (chart.pending) return;
    chart.pending = true;
    // One redraw per frame however many points arrive in it.
    requestAnimationFrame(function () { chart.pending = false; draw(chart); });
  }

  var spendChart = makeChart("spend-chart", data.charts.spend, "USD");
  var scoreChart = makeChart("score-chart", data.charts.score, "score");
  window.addEventListener("load", function () { draw(spendChart); draw(scoreChart); });
  window.addEventListener("resize", function () {
    [spendChart, scoreChart].forEach(function (c) {
      if (c.plot) c.plot.setSize({ width: Math.max(240, c.box.clientWidth), height: 180 });
    });
  });

  // --- the websocket -------------------------------------------------------------

  var delay = 500;

  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var url = scheme + location.host + "/ws/realms/" + encodeURIComponent(data.realm_id) +
      "/?after_event=" + lastEvent + "&after_ts=" + lastTs;
    var ws = new WebSocket(url);
    ws.onmessage = function (msg) {
      var p = JSON.parse(msg.data);
      if (p.v !== 1) return;
      if (p.kind === "message") addMessage(p);
      else if (p.kind === "event") addEvent(p);
      else if (p.kind === "spend") addSpend(p);
      else if (p.kind === "state") { if (p.id > lastEvent) lastEvent = p.id; setState(p.state); }
      else if (p.kind === "ready") {
        // Away too long for a replay to fill the gap: the page itself is the history.
        if (p.truncated) { location.reload(); return; }
        delay = 500;
        liveStatus.textContent = TERMINAL[state] ? "ended" : "live";
        document.body.dataset.live = "ready";
      } else if (p.kind === "error") liveStatus.textContent = p.error;
    };
    ws.onclose = function (e) {
      document.body.dataset.live = "closed";
      if (FINAL_CODES[e.code]) return;
      liveStatus.textContent = "reconnecting…";
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 10000);
    };
  }

  scanTranscript();
  transcriptBox.scrollTop = transcriptBox.scrollHeight;
  timelineBox.scrollTop = timelineBox.scrollHeight;
  connect();
})();
