// The team's group, played in the browser: it draws the chat as the fake
// Bot API holds it and sends what the chosen person types or taps as that
// person's update. Nothing from the chat is ever inserted as markup: the
// bot's HTML is parsed inert and rebuilt from Telegram's few tags.
"use strict";

(function () {
  var state = { as: 0, replyTo: 0, last: "", seen: {}, first: true, people: [], view: null, drawn: {} };
  var $ = function (id) { return document.getElementById(id); };

  function api(path, body) {
    var init = body === undefined ? {} : {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Deskbot-Demo": "1" },
      body: JSON.stringify(body)
    };
    return fetch(path, init).then(function (r) {
      if (!r.ok) { return r.text().then(function (t) { throw new Error(t || r.statusText); }); }
      return r.json();
    });
  }

  // Telegram's HTML: these tags and nothing else; links only to http(s).
  var kept = { B: "b", STRONG: "b", I: "i", EM: "i", U: "u", INS: "u", S: "s", STRIKE: "s", DEL: "s", CODE: "code", PRE: "pre", BLOCKQUOTE: "blockquote" };
  function rebuild(from, into) {
    from.childNodes.forEach(function (n) {
      if (n.nodeType === Node.TEXT_NODE) { into.appendChild(document.createTextNode(n.data)); return; }
      if (n.nodeType !== Node.ELEMENT_NODE) { return; }
      var el;
      var href = n.tagName === "A" ? (n.getAttribute("href") || "") : "";
      if (kept[n.tagName]) {
        el = document.createElement(kept[n.tagName]);
      } else if (n.tagName === "A" && /^https?:\/\//i.test(href)) {
        el = document.createElement("a");
        el.href = href; el.target = "_blank"; el.rel = "noopener noreferrer";
      } else if (n.tagName === "A" && /^tg:\/\/user/i.test(href)) {
        el = document.createElement("span"); el.className = "mention";
      } else if (n.tagName === "TG-SPOILER" || (n.tagName === "SPAN" && n.classList.contains("tg-spoiler"))) {
        el = document.createElement("span"); el.className = "spoiler";
      } else {
        el = into; // unknown: its text only
      }
      rebuild(n, el);
      if (el !== into) { into.appendChild(el); }
    });
  }

  function body(m) {
    var div = document.createElement("div");
    div.className = "body";
    if (m.html) {
      var doc = new DOMParser().parseFromString("<!doctype html><body>" + m.html, "text/html");
      rebuild(doc.body, div);
    } else {
      div.textContent = m.text;
    }
    return div;
  }

  function personName(id) {
    for (var i = 0; i < state.people.length; i++) { if (state.people[i].id === id) { return state.people[i]; } }
    return null;
  }

  function messageNode(m) {
    var wrap = document.createElement("div");
    wrap.className = "msg" + (m.bot ? " bot" : "") + (!m.bot && m.fromId === state.as ? " mine" : "") + (m.id === state.replyTo ? " selected" : "");
    wrap.dataset.id = m.id;
    var b = document.createElement("div");
    b.className = "bubble";
    b.title = "Tap to reply";
    if (!(!m.bot && m.fromId === state.as)) {
      var from = document.createElement("div");
      from.className = "from";
      from.textContent = m.from;
      var p = personName(m.fromId);
      var tag = document.createElement("span");
      tag.className = "tag";
      tag.textContent = m.bot ? "bot" : (p && p.approver ? "approver" : "member");
      from.appendChild(tag);
      b.appendChild(from);
    }
    if (m.quote !== undefined && m.replyTo) {
      var q = document.createElement("div");
      q.className = "quote";
      var qb = document.createElement("b");
      qb.textContent = m.quoteFrom;
      q.appendChild(qb);
      q.appendChild(document.createTextNode(m.quote));
      b.appendChild(q);
    }
    if (m.photo) {
      var img = document.createElement("img");
      img.className = "photo"; img.alt = "picture"; img.src = "/api/photo/" + m.id;
      b.appendChild(img);
    }
    b.appendChild(body(m));
    if (m.reactions && m.reactions.length) {
      var rs = document.createElement("div");
      rs.className = "reactions";
      m.reactions.forEach(function (r) { var s = document.createElement("span"); s.textContent = r; rs.appendChild(s); });
      b.appendChild(rs);
    }
    var meta = document.createElement("div");
    meta.className = "meta";
    meta.textContent = (m.edited ? "edited " : "") + m.time + " IST";
    b.appendChild(meta);
    b.addEventListener("click", function (e) {
      if (e.target.closest("a")) { return; }
      setReply(m.id, m.from, m.text);
    });
    wrap.appendChild(b);
    if (m.keyboard && m.keyboard.length) {
      var kb = document.createElement("div");
      kb.className = "kb";
      m.keyboard.forEach(function (row) {
        var r = document.createElement("div");
        r.className = "kbrow";
        row.forEach(function (btn) { r.appendChild(buttonNode(m, btn)); });
        kb.appendChild(r);
      });
      wrap.appendChild(kb);
    }
    return wrap;
  }

  function buttonNode(m, btn) {
    var el;
    if (btn.desks || btn.url) {
      el = document.createElement("a");
      el.className = "kbtn link";
      el.target = "_blank"; el.rel = "noopener noreferrer";
      el.href = btn.desks ? "/desks?as=" + state.as : (/^https?:\/\//i.test(btn.url) ? btn.url : "#");
    } else {
      el = document.createElement("button");
      el.type = "button";
      el.className = "kbtn";
      el.addEventListener("click", function () { tap(el, m.id, btn.data); });
    }
    el.textContent = btn.text;
    return el;
  }

  function tap(el, id, data) {
    el.disabled = true;
    api("/api/tap", { as: state.as, message: id, data: data }).then(function (a) {
      if (!a.answered) { toast("The bot did not answer the tap."); }
      else if (a.alert) { alert(a.text); }
      else if (a.text) { toast(a.text); }
      refresh();
    }).catch(function (e) { toast(e.message); refresh(); }).finally(function () { el.disabled = false; });
  }

  var toastTimer;
  function toast(text) {
    var t = $("toast");
    t.textContent = text; t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(function () { t.hidden = true; }, 3500);
  }
  function alert(text) { $("alert-text").textContent = text; $("alert").hidden = false; $("alert-ok").focus(); }

  function setReply(id, from, text) {
    state.replyTo = id;
    $("replying").hidden = !id;
    $("replying-text").textContent = id ? "Reply to " + from + ": " + (text.length > 60 ? text.slice(0, 59) + "…" : text) : "";
    document.querySelectorAll(".msg").forEach(function (n) { n.classList.toggle("selected", Number(n.dataset.id) === id); });
    if (id) { $("text").focus(); }
  }

  // render draws the chat, keeping the node of every message that has not
  // changed: a tap in progress, a selection or a button under the pointer
  // survives the next poll.
  function render(v) {
    var log = $("log");
    var atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
    var want = [$("intro")];
    var drawn = {};
    (v.messages || []).forEach(function (m) {
      var key = state.as + "|" + JSON.stringify(m);
      var old = state.drawn[m.id];
      var node = old && old.key === key ? old.node : messageNode(m);
      drawn[m.id] = { key: key, node: node };
      want.push(node);
      // A prompt asking for a reply (a denial's reason) is answered by
      // replying to it, as Telegram opens the reply for its addressee.
      if (!state.first && !state.seen[m.id] && m.forceReply) { setReply(m.id, m.from, m.text); }
      state.seen[m.id] = true;
    });
    state.drawn = drawn;
    for (var i = 0; i < want.length; i++) {
      if (log.children[i] !== want[i]) { log.insertBefore(want[i], log.children[i] || null); }
    }
    while (log.children.length > want.length) { log.removeChild(log.lastChild); }
    document.querySelectorAll(".msg").forEach(function (n) { n.classList.toggle("selected", Number(n.dataset.id) === state.replyTo); });
    if (atBottom || state.first) { log.scrollTop = log.scrollHeight; }
    state.first = false;
    var dl = $("commands");
    var commands = v.commands || [];
    if (dl.children.length !== commands.length) {
      dl.replaceChildren.apply(dl, commands.map(function (c) {
        var o = document.createElement("option"); o.value = "/" + c.command; o.label = c.description; return o;
      }));
    }
  }

  function refresh() {
    return api("/api/chat").then(function (v) {
      var text = JSON.stringify(v);
      if (text === state.last) { return; }
      state.last = text;
      state.view = v;
      render(v);
    }).catch(function () { /* the demo stopped or is restarting: try again */ });
  }

  function people(list) {
    state.people = list;
    var nav = $("people");
    nav.replaceChildren();
    list.forEach(function (p) {
      var b = document.createElement("button");
      b.type = "button"; b.className = "person"; b.dataset.id = p.id;
      b.appendChild(document.createTextNode(p.name + " "));
      var r = document.createElement("span"); r.className = "role"; r.textContent = p.approver ? "approver" : "member";
      b.appendChild(r);
      b.addEventListener("click", function () { choose(p.id); });
      nav.appendChild(b);
    });
  }

  // choose speaks as another person: the chat is redrawn at once (whose
  // messages are "mine" changed) before the choice shows as made.
  function choose(id) {
    state.as = id;
    if (state.view) { render(state.view); }
    $("desks").href = "/desks?as=" + id;
    document.querySelectorAll(".person").forEach(function (b) { b.setAttribute("aria-pressed", String(Number(b.dataset.id) === id)); });
  }

  var suggestions = ["/tell main buy 10 INFY", "/tell main buy 400 INFY", "/tell main buy 2000 INFY", "/tell main sell 5 TCS at 4100", "/tell main positions", "/requests", "/desks", "/grants", "/help"];

  function start() {
    api("/api/chat").then(function (v) {
      people(v.people);
      $("desks").hidden = !v.desks;
      $("chat-title").textContent = v.title;
      state.last = JSON.stringify(v);
      state.view = v;
      choose(v.people[0].id);
    });
    var chips = $("chips");
    suggestions.forEach(function (s) {
      var c = document.createElement("button");
      c.type = "button"; c.className = "chip"; c.textContent = s;
      c.addEventListener("click", function () { $("text").value = s; $("text").focus(); });
      chips.appendChild(c);
    });
    $("composer").addEventListener("submit", function (e) {
      e.preventDefault();
      var text = $("text").value.trim();
      if (!text || !state.as) { return; }
      api("/api/send", { as: state.as, text: text, replyTo: state.replyTo }).then(function () {
        $("text").value = "";
        setReply(0);
        refresh();
      }).catch(function (err) { toast(err.message); });
    });
    $("replying-cancel").addEventListener("click", function () { setReply(0); });
    $("alert-ok").addEventListener("click", function () { $("alert").hidden = true; });
    setInterval(refresh, 700);
  }

  start();
}());
