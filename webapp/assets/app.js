// The desks page. Every request carries the Mini App's initData in the
// X-Telegram-Init-Data header (never in a URL); views are HTML fragments
// drawn by the server, inserted as they come (the server escapes all desk
// text; no script runs from them). Works without telegram-web-app.js: the
// initData and theme are then read from the URL's fragment, where Telegram
// puts them too.
"use strict";
(function () {
  var base = document.body.dataset.base;
  var view = document.getElementById("view");
  var toast = document.getElementById("toast");
  var dialog = document.getElementById("dialog");
  var hash = new URLSearchParams(location.hash.slice(1));
  var initData = "";
  var current = "desks";
  var stale = false;

  function webApp() { return window.Telegram && window.Telegram.WebApp; }

  function signIn() {
    var wa = webApp();
    if (wa && wa.initData) { initData = wa.initData; }
    if (!initData) { initData = hash.get("tgWebAppData") || ""; }
  }

  function theme() {
    var wa = webApp(), p = wa && wa.themeParams;
    if (!p || !Object.keys(p).length) {
      try { p = JSON.parse(hash.get("tgWebAppThemeParams") || "{}"); } catch (e) { p = {}; }
    }
    Object.keys(p).forEach(function (k) {
      if (/^[a-z_]+$/.test(k) && /^#[0-9a-fA-F]{3,8}$/.test(String(p[k]))) {
        document.documentElement.style.setProperty("--tg-theme-" + k.replace(/_/g, "-"), p[k]);
      }
    });
  }

  function telegramReady() {
    var wa = webApp();
    if (!wa) { return; }
    signIn();
    theme();
    try { wa.ready(); wa.expand(); } catch (e) { /* an old client */ }
  }

  function say(text, bad) {
    toast.textContent = text;
    toast.className = bad ? "bad" : "";
    toast.hidden = false;
    clearTimeout(say.t);
    say.t = setTimeout(function () { toast.hidden = true; }, 6000);
  }

  function call(method, path, body) {
    var opts = { method: method, headers: { "X-Telegram-Init-Data": initData }, cache: "no-store", credentials: "omit" };
    if (body) {
      opts.headers["Content-Type"] = "application/x-www-form-urlencoded";
      opts.body = new URLSearchParams(body).toString();
    }
    return fetch(base + path, opts).then(function (r) {
      return r.text().then(function (t) { return { ok: r.ok, status: r.status, text: t }; });
    });
  }

  function tabs() {
    document.querySelectorAll("#tabs .tab").forEach(function (a) {
      a.classList.toggle("on", current.split(/[/?]/)[0] === a.dataset.view.split(/[/?]/)[0]);
    });
  }

  function load(name) {
    current = name;
    stale = false;
    tabs();
    var parts = name.split("?");
    var path = "v/" + parts[0].split("/").map(encodeURIComponent).join("/") + (parts[1] ? "?" + parts[1] : "");
    return call("GET", path).then(function (r) {
      if (!r.ok) {
        view.innerHTML = "";
        var p = document.createElement("p");
        p.className = "error";
        p.id = "refused";
        p.textContent = r.text;
        view.appendChild(p);
        return;
      }
      view.innerHTML = r.text;
      view.dataset.view = name;
    }).catch(function () { say("The desks page cannot reach deskbot just now.", true); });
  }

  function typing() {
    var a = document.activeElement;
    return a && view.contains(a) && (a.tagName === "INPUT" || a.tagName === "SELECT");
  }

  function refresh() {
    clearTimeout(refresh.t);
    refresh.t = setTimeout(function () {
      if (typing()) { stale = true; return; }
      load(current);
    }, 250);
  }

  function post(btn) {
    var d = btn.dataset, body = {};
    ["id", "decision", "desk", "tool", "token", "shown", "terms"].forEach(function (k) { if (d[k]) { body[k] = d[k]; } });
    var card = btn.closest("[data-card]");
    var reason = card && card.querySelector("input[name=reason]");
    if (reason && d.decision === "deny") { body.reason = reason.value; }
    var changes = card && card.querySelector("input[name=changes]");
    if (changes && d.post === "change") { body.changes = changes.value; }
    btn.disabled = true;
    return call("POST", "a/" + d.post, body).then(function (r) {
      say(r.text, !r.ok);
      dialog.hidden = true;
      dialog.innerHTML = "";
      if (r.ok && (d.post === "decide" || d.post === "change")) {
        var el = document.getElementById("req-" + d.id);
        if (el) { el.remove(); }
      }
      btn.disabled = false;
      refresh();
    }).catch(function () { btn.disabled = false; say("Not sent: deskbot cannot be reached.", true); });
  }

  function ask(btn) {
    var path = btn.dataset.ask === "grant"
      ? "v/grant?id=" + encodeURIComponent(btn.dataset.id) + "&shown=" + encodeURIComponent(btn.dataset.shown || "")
      : "v/flatten?desk=" + encodeURIComponent(btn.dataset.desk);
    call("GET", path).then(function (r) {
      if (!r.ok) { say(r.text, true); return; }
      dialog.innerHTML = r.text;
      dialog.hidden = false;
    });
  }

  // The report's picture needs the sign-in header too, so it is fetched,
  // not linked, and shown as a data: URL (the CSP allows no blob:).
  function picture(path) {
    var opts = { headers: { "X-Telegram-Init-Data": initData }, cache: "no-store", credentials: "omit" };
    fetch(base + path.split("/").map(encodeURIComponent).join("/"), opts).then(function (r) {
      if (!r.ok) { return r.text().then(function (t) { say(t, true); }); }
      return r.blob().then(function (b) {
        var rd = new FileReader();
        rd.onload = function () {
          dialog.innerHTML = "";
          var img = document.createElement("img");
          img.src = rd.result;
          img.alt = "The report";
          img.className = "report";
          var close = document.createElement("button");
          close.textContent = "Close";
          close.dataset.close = "1";
          dialog.appendChild(img);
          dialog.appendChild(close);
          dialog.hidden = false;
        };
        rd.readAsDataURL(b);
      });
    }).catch(function () { say("The desks page cannot reach deskbot just now.", true); });
  }

  // The audit's export of a day (the filter's, or today's) needs the
  // sign-in header too: fetched, then saved from a data: URL.
  function exportDay(btn) {
    var form = btn.closest("form"), day = form && form.elements.day ? form.elements.day.value : "";
    var opts = { headers: { "X-Telegram-Init-Data": initData }, cache: "no-store", credentials: "omit" };
    btn.disabled = true;
    fetch(base + "x/audit.csv" + (day ? "?day=" + encodeURIComponent(day) : ""), opts).then(function (r) {
      return r.text().then(function (t) {
        btn.disabled = false;
        if (!r.ok) { say(t, true); return; }
        var name = (/filename="([^"]+)"/.exec(r.headers.get("Content-Disposition") || "") || [])[1] || "audit.csv";
        var a = document.createElement("a");
        a.href = "data:text/csv;charset=utf-8," + encodeURIComponent(t);
        a.download = name;
        document.body.appendChild(a);
        a.click();
        a.remove();
      });
    }).catch(function () { btn.disabled = false; say("The desks page cannot reach deskbot just now.", true); });
  }

  document.addEventListener("click", function (ev) {
    var el = ev.target.closest("[data-view],[data-post],[data-ask],[data-close],[data-picture],[data-export]");
    if (!el) { return; }
    ev.preventDefault();
    if (el.dataset.export) { exportDay(el); }
    else if (el.dataset.picture) { picture(el.dataset.picture); }
    else if (el.dataset.view) { load(el.dataset.view); }
    else if (el.dataset.post) { post(el); }
    else if (el.dataset.ask) { ask(el); }
    else { dialog.hidden = true; dialog.innerHTML = ""; }
  });
  document.addEventListener("submit", function (ev) { ev.preventDefault(); });
  document.addEventListener("change", function (ev) {
    var form = ev.target.closest("form[data-filter]");
    if (!form) { return; }
    var q = new URLSearchParams();
    new FormData(form).forEach(function (v, k) { if (v) { q.set(k, v); } });
    load("audit" + (q.toString() ? "?" + q.toString() : ""));
  });
  document.addEventListener("focusout", function () { if (stale) { setTimeout(function () { if (!typing() && stale) { refresh(); } }, 50); } });

  // Live: server-sent events read with fetch, which can carry the header.
  function live() {
    fetch(base + "events", { headers: { "X-Telegram-Init-Data": initData }, cache: "no-store", credentials: "omit" }).then(function (r) {
      if (!r.ok || !r.body) { return; }
      var reader = r.body.getReader(), dec = new TextDecoder(), buf = "";
      document.body.dataset.live = "on";
      function pump() {
        return reader.read().then(function (x) {
          if (x.done) { throw new Error("closed"); }
          buf += dec.decode(x.value, { stream: true });
          var i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            handle(buf.slice(0, i));
            buf = buf.slice(i + 2);
          }
          return pump();
        });
      }
      return pump();
    }).catch(function () {}).then(function () {
      document.body.dataset.live = "off";
      if (!live.expired) { setTimeout(live, 3000); }
    });
  }

  function handle(block) {
    var event = "message", data = "";
    block.split("\n").forEach(function (l) {
      if (l.indexOf("event: ") === 0) { event = l.slice(7); }
      if (l.indexOf("data: ") === 0) { data += l.slice(6); }
    });
    if (event === "expired") {
      live.expired = true;
      say("Your sign-in has expired. Close the desks page and open it again from Telegram.", true);
      return;
    }
    if (event !== "change") { return; }
    var e;
    try { e = JSON.parse(data); } catch (err) { return; }
    if (e.request && e.kind !== "user_request") {
      var el = document.getElementById("req-" + e.request);
      if (el && e.state !== "open") { el.remove(); }
    }
    refresh();
  }

  signIn();
  theme();
  if (webApp()) { telegramReady(); }
  else {
    var tg = document.getElementById("tg");
    if (tg) { tg.addEventListener("load", telegramReady); }
  }
  if (!initData) {
    view.innerHTML = "";
    var p = document.createElement("p");
    p.className = "error";
    p.id = "refused";
    p.textContent = "Open this page from Telegram: it carries no sign-in.";
    view.appendChild(p);
    return;
  }
  load("desks");
  live();
})();
