// The hits table: the JSON blob is parsed once; rows are filtered in memory and one page
// at a time is put in the DOM, so 100,000 attempts open fast. Text goes in as textContent,
// never as markup: outputs are adversarial.
(function () {
  "use strict";
  var blob = document.getElementById("hits-data");
  var body = document.getElementById("hits-body");
  if (!blob || !body) { return; }
  var data = JSON.parse(blob.textContent);
  var S = data.strings;
  var lower = S.map(function (s) { return s === null ? "" : String(s).toLowerCase(); });
  var hits = data.hits; // [probe, detector, score, goal, output, attempt id, intent] as string indexes
  var PAGE = 50;
  var page = 0;
  var shown = hits;
  var probeSel = document.getElementById("hits-probe");
  var detSel = document.getElementById("hits-detector");
  var search = document.getElementById("hits-search");
  var count = document.getElementById("hits-count");
  var pageInfo = document.getElementById("hits-page");
  var prev = document.getElementById("hits-prev");
  var next = document.getElementById("hits-next");

  function fillSelect(sel, column) {
    var seen = {};
    hits.forEach(function (h) { seen[S[h[column]]] = true; });
    Object.keys(seen).sort().forEach(function (v) {
      var o = document.createElement("option");
      o.value = v; o.textContent = v; sel.appendChild(o);
    });
  }

  function cell(tr, text, cls) {
    var td = document.createElement("td");
    if (cls) { td.className = cls; }
    td.textContent = text === null || text === undefined ? "—" : text;
    tr.appendChild(td);
  }

  function render() {
    var pages = Math.max(1, Math.ceil(shown.length / PAGE));
    if (page >= pages) { page = pages - 1; }
    var frag = document.createDocumentFragment();
    shown.slice(page * PAGE, (page + 1) * PAGE).forEach(function (h) {
      var tr = document.createElement("tr");
      cell(tr, S[h[0]]);
      cell(tr, S[h[1]]);
      cell(tr, h[2].toFixed(2), "num");
      cell(tr, S[h[3]], "goal");
      cell(tr, S[h[4]], "out");
      cell(tr, S[h[5]]);
      frag.appendChild(tr);
    });
    body.replaceChildren(frag);
    count.textContent = shown.length + " of " + hits.length + " hits";
    pageInfo.textContent = "page " + (page + 1) + " of " + pages;
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
  }

  function apply() {
    var p = probeSel.value, d = detSel.value, q = search.value.trim().toLowerCase();
    shown = hits.filter(function (h) {
      if (p && S[h[0]] !== p) { return false; }
      if (d && S[h[1]] !== d) { return false; }
      if (q && lower[h[4]].indexOf(q) < 0 && lower[h[3]].indexOf(q) < 0 &&
          lower[h[5]].indexOf(q) < 0 && lower[h[6]].indexOf(q) < 0) { return false; }
      return true;
    });
    page = 0;
    render();
  }

  var timer = null;
  fillSelect(probeSel, 0);
  fillSelect(detSel, 1);
  probeSel.addEventListener("change", apply);
  detSel.addEventListener("change", apply);
  search.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(apply, 120);
  });
  prev.addEventListener("click", function () { page -= 1; render(); });
  next.addEventListener("click", function () { page += 1; render(); });
  render();
  document.body.setAttribute("data-hits-ready", "1");
})();
