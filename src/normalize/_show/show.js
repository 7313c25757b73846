(function () {
  "use strict";
  var doc = document, body = doc.body;
  var bar = doc.getElementById("toolbar");
  if (!bar) return;
  bar.hidden = false;
  var q = doc.getElementById("q"), count = doc.getElementById("count");
  var timer = 0;
  function items() { return doc.querySelectorAll("[data-kind]"); }
  function search() {
    var needle = q.value.trim().toLowerCase(), n = 0, all = items();
    for (var i = 0; i < all.length; i++) {
      var el = all[i], hit = !needle || el.textContent.toLowerCase().indexOf(needle) >= 0;
      el.classList.toggle("nomatch", !hit);
      if (hit && needle) { n++; if (el.tagName === "DETAILS") el.open = true; }
    }
    count.textContent = needle ? n + " match" + (n === 1 ? "" : "es") : "";
  }
  q.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(search, 120); });
  var boxes = bar.querySelectorAll("input[data-filter]");
  function filters() {
    for (var i = 0; i < boxes.length; i++) body.classList.toggle("hide-" + boxes[i].dataset.filter, !boxes[i].checked);
  }
  for (var i = 0; i < boxes.length; i++) boxes[i].addEventListener("change", filters);
  function setAll(open) { var d = doc.querySelectorAll("details"); for (var i = 0; i < d.length; i++) d[i].open = open; }
  doc.getElementById("expand").addEventListener("click", function () { setAll(true); });
  doc.getElementById("collapse").addEventListener("click", function () { setAll(false); });
  var before = null;
  window.addEventListener("beforeprint", function () {
    var d = doc.querySelectorAll("details"); before = [];
    for (var i = 0; i < d.length; i++) { before.push(d[i].open); d[i].open = true; }
  });
  window.addEventListener("afterprint", function () {
    if (!before) return; var d = doc.querySelectorAll("details");
    for (var i = 0; i < d.length && i < before.length; i++) d[i].open = before[i];
    before = null;
  });
  // Live pages (normalize show --follow): the server sends the rendered sessions again
  // after every batch of events; open folds the reader chose are kept.
  if (body.dataset.live === "1" && window.EventSource) {
    var main = doc.getElementById("sessions"), state = doc.getElementById("live-state");
    var chosen = {};
    main.addEventListener("toggle", function (ev) { var k = ev.target.dataset && ev.target.dataset.key; if (k) chosen[k] = ev.target.open; }, true);
    var source = new EventSource("events");
    source.addEventListener("page", function (ev) {
      var atEnd = window.innerHeight + window.scrollY >= doc.documentElement.scrollHeight - 40;
      var tpl = doc.createElement("template");
      tpl.innerHTML = JSON.parse(ev.data);
      var d = tpl.content.querySelectorAll("details[data-key]");
      for (var i = 0; i < d.length; i++) { var k = d[i].dataset.key; if (k in chosen) d[i].open = chosen[k]; }
      main.replaceChildren(tpl.content);
      filters(); if (q.value) search();
      if (state) state.textContent = "live · updated " + new Date().toLocaleTimeString();
      if (atEnd) window.scrollTo(0, doc.documentElement.scrollHeight);
    });
    source.addEventListener("end", function () { if (state) state.textContent = "live · the session file was closed"; source.close(); });
    source.onerror = function () { if (state) state.textContent = "live · reconnecting…"; };
  }
})();
