/* whyalive offline viewer. Every string from the report is inserted with textContent;
   attributes set here hold numbers or fixed words only. Layout: Graphviz coordinates
   embedded by the writer, otherwise the vendored dagre library. */
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var CHAR_W = 6.7, LINE_H = 14, PAD = 12;
  var data = JSON.parse(document.getElementById("whyalive-data").textContent);
  var report = data.report;
  var views = data.views;
  /* Every sentence and size comes phrased from whyalive.words (render/html_page.py). */
  var words = data.words;
  var heavyById = {};
  (report.heavy_objects || []).forEach(function (h) { heavyById[h.node_id] = h; });
  (report.alive || []).forEach(function (a) {
    if (!(a.node_id in heavyById)) { heavyById[a.node_id] = a; }
  });

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function svgEl(tag, attrs) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    return node;
  }
  function field(parent, name, value) {
    if (value === undefined || value === null || value === "") { return; }
    var row = el("div", "field");
    row.appendChild(el("span", "key", name));
    row.appendChild(el("span", "value", value));
    parent.appendChild(row);
  }
  function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } }
  /* A sentence from the report: `code` spans become <code> elements, all as text nodes. */
  function sentence(parent, text) {
    String(text || "").split("`").forEach(function (part, i) {
      if (!part) { return; }
      parent.appendChild(i % 2 ? el("code", null, part) : document.createTextNode(part));
    });
    return parent;
  }
  function labelled(cls, key, text) {
    var p = el("p", cls); p.appendChild(el("strong", null, key + ": "));
    return sentence(p, text);
  }

  /* ---- header ---- */
  /* Uncollectable loops (through the autograd graph) read as cycles, after them. */
  var cycles = (report.cycles || []).concat(report.uncollectable || []);
  var headline = document.getElementById("headline");
  /* The same sentence as the text report's first line (whyalive.words.report_headline). */
  var said = data.headline || "";
  headline.textContent = said.charAt(0).toUpperCase() + said.slice(1);
  document.getElementById("run").textContent = words.run;

  /* ---- cycle list ---- */
  var nav = document.getElementById("cycles");
  var buttons = [];
  views.forEach(function (view, i) {
    var b = el("button", "cycle-item");
    b.type = "button";
    b.appendChild(el("span", "cycle-title", view.title));
    var cycle = cycles[i];
    if (cycle) {
      b.appendChild(el("span", "cycle-meta", words.cycles[i].meta));
    }
    b.addEventListener("click", function () { select(i); });
    nav.appendChild(b);
    buttons.push(b);
  });
  if (!views.length) { nav.appendChild(el("p", "empty", "Nothing to show.")); }

  function showCycle(i) {
    var box = document.getElementById("cycle-details");
    clear(box);
    var cycle = cycles[i];
    if (cycle) {
      var said = words.cycles[i];
      box.appendChild(el("h2", null, cycle.title));
      if (said.cut) { box.appendChild(labelled("cut", "Cut", said.cut)); }
      box.appendChild(labelled("fix", "Fix", cycle.fix));
      box.appendChild(labelled("why", "Why", cycle.explanation));
      box.appendChild(sentence(el("p", "summary"), cycle.summary));
      if (said.holds.length) {
        box.appendChild(el("h3", null, "Holds"));
        var holds = el("ul", "holds");
        said.holds.forEach(function (h) {
          var li = el("li");
          li.appendChild(el("code", null, h.where));
          li.appendChild(document.createTextNode(": " + h.what));
          holds.appendChild(li);
        });
        box.appendChild(holds);
      }
      /* The same closed loop the text prints: each hop a reference, back to the start. */
      if ((cycle.loop || []).length) {
        box.appendChild(el("h3", null, "Loop"));
        var loop = el("ol", "loop");
        cycle.loop.forEach(function (e, k) {
          if (said.loop_gap && k === cycle.loop_hidden_after) {
            loop.appendChild(el("li", "gap", said.loop_gap));
          }
          var li = el("li");
          li.appendChild(el("span", "from", (report.nodes[e.source] || {}).label));
          li.appendChild(el("code", null, " --" + said.loop[k] + "--> "));
          li.appendChild(el("span", "to", (report.nodes[e.target] || {}).label));
          loop.appendChild(li);
        });
        box.appendChild(loop);
      }
      field(box, "bytes held", said.bytes);
      field(box, "pattern", cycle.pattern);
      field(box, "signature", cycle.signature);
      field(box, "lint rule", cycle.lint_rule);
      return;
    }
    var alive = (report.alive || [])[i - cycles.length];
    if (alive) {
      box.appendChild(el("h2", null, views[i].title));
      field(box, "size", words.alive[i - cycles.length]);
      field(box, "device", alive.device);
      field(box, "root", alive.root);
      field(box, "note", alive.note);
      field(box, "allocated at", alive.allocation_site);
    }
  }

  function showNode(id) {
    var box = document.getElementById("details");
    clear(box);
    var node = report.nodes[id];
    if (!node) { return; }
    box.appendChild(el("h3", null, "Object"));
    field(box, "type", node.type_name);
    field(box, "name", node.label);
    field(box, "file:line", node.location);
    field(box, "size", words.node_sizes[id]);
    var heavy = heavyById[id];
    if (heavy) {
      field(box, "description", heavy.description);
      field(box, "device", heavy.device);
      field(box, "bytes", words.heavy_sizes[String(id)]);
      field(box, "allocated at", heavy.allocation_site || "not recorded");
    }
    graphSvg.querySelectorAll(".node.selected").forEach(function (n) {
      n.classList.remove("selected");
    });
    var drawn = graphSvg.querySelector('.node[data-node="' + Number(id) + '"]');
    if (drawn) { drawn.classList.add("selected"); }
  }

  /* ---- layout ---- */
  function dagreLayout(view) {
    var g = new dagre.graphlib.Graph({ multigraph: true });
    g.setGraph({ rankdir: "LR", nodesep: 22, ranksep: 40, marginx: 10, marginy: 10 });
    g.setDefaultEdgeLabel(function () { return {}; });
    view.nodes.forEach(function (n) { g.setNode(String(n.id), { width: n.w, height: n.h }); });
    view.edges.forEach(function (e, k) {
      g.setEdge(String(e.source), String(e.target),
        { width: e.label.length * CHAR_W, height: LINE_H, labelpos: "c" }, "e" + k);
    });
    dagre.layout(g);
    var out = { nodes: {}, edges: [], curved: false, width: g.graph().width || 0,
      height: g.graph().height || 0 };
    view.nodes.forEach(function (n) {
      var p = g.node(String(n.id)); out.nodes[n.id] = [p.x, p.y];
    });
    view.edges.forEach(function (e, k) {
      var p = g.edge(String(e.source), String(e.target), "e" + k);
      out.edges.push({ points: p.points.map(function (q) { return [q.x, q.y]; }),
        label: [p.x, p.y] });
    });
    return out;
  }

  function pathData(points, curved) {
    var d = "M" + points[0][0] + "," + points[0][1];
    if (curved && (points.length - 1) % 3 === 0) {
      for (var i = 1; i < points.length; i += 3) {
        d += " C" + points[i] + " " + points[i + 1] + " " + points[i + 2];
      }
    } else {
      for (var j = 1; j < points.length; j += 1) { d += " L" + points[j][0] + "," + points[j][1]; }
    }
    return d;
  }

  /* ---- drawing, pan and zoom ---- */
  var graphSvg = document.getElementById("graph");
  var state = { x: 0, y: 0, k: 1 };
  var world = null;
  function applyTransform() {
    if (world) {
      world.setAttribute("transform", "translate(" + state.x + "," + state.y + ") scale(" +
        state.k + ")");
    }
  }

  function draw(view) {
    clear(graphSvg);
    var defs = svgEl("defs");
    ["plain", "cut"].forEach(function (kind) {
      var m = svgEl("marker", { id: "arrow-" + kind, viewBox: "0 0 10 10", refX: "9", refY: "5",
        markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" });
      m.appendChild(svgEl("path", { d: "M0,0 L10,5 L0,10 z", "class": "arrow-" + kind }));
      defs.appendChild(m);
    });
    graphSvg.appendChild(defs);
    world = svgEl("g", { "class": "world" });
    graphSvg.appendChild(world);
    if (!view.nodes.length) { return; }
    var layout = view.layout || dagreLayout(view);
    var members = {};
    view.members.forEach(function (m) { members[m] = true; });
    view.edges.forEach(function (e, k) {
      var geo = layout.edges[k];
      if (!geo || !geo.points.length) { return; }
      var g = svgEl("g", { "class": e.cut ? "edge cut" : "edge" });
      var path = svgEl("path", { d: pathData(geo.points, layout.curved),
        "marker-end": e.cut ? "url(#arrow-cut)" : "url(#arrow-plain)" });
      g.appendChild(path);
      if (geo.label) {
        var t = svgEl("text", { x: geo.label[0], y: geo.label[1], "text-anchor": "middle" });
        t.textContent = e.label;
        g.appendChild(t);
      }
      var tip = svgEl("title"); tip.textContent = (e.cut ? "suggested cut: " : "") + e.label;
      g.appendChild(tip);
      world.appendChild(g);
    });
    view.nodes.forEach(function (n) {
      var p = layout.nodes[n.id];
      if (!p) { return; }
      var node = report.nodes[n.id] || {};
      var kind = node.heavy ? " heavy" : (members[n.id] ? " member" : "");
      var g = svgEl("g", { "class": "node" + kind, "data-node": Number(n.id),
        transform: "translate(" + (p[0] - n.w / 2) + "," + (p[1] - n.h / 2) + ")" });
      g.appendChild(svgEl("rect", { width: n.w, height: n.h, rx: 5, ry: 5 }));
      n.lines.forEach(function (line, i) {
        var t = svgEl("text", { x: PAD, y: PAD / 2 + LINE_H * (i + 1) - 3,
          "class": i ? "sub" : "main" });
        t.textContent = line;
        g.appendChild(t);
      });
      var tip = svgEl("title"); tip.textContent = node.type_name || "";
      g.appendChild(tip);
      g.addEventListener("click", function (ev) { ev.stopPropagation(); showNode(n.id); });
      world.appendChild(g);
    });
    fit(layout.width, layout.height, true);
  }

  var extent = { w: 1, h: 1 };
  /* Edge labels are 11 px at scale 1: a graph opens no smaller than that, and a small one
     grows to fill its pane (up to 2.5 times). */
  var MIN_READABLE = 1, MAX_FIT = 2.5;
  /* readable: a long cycle shown whole would be unreadably small, so start at a legible
     scale at its left end and let the user pan; the "fit" button shows it whole. */
  var unsized = false;
  function fit(w, h, readable) {
    extent = { w: w || 1, h: h || 1 };
    var box = graphSvg.getBoundingClientRect();
    unsized = box.width < 1 || box.height < 1;
    if (unsized) { return; }
    var k = Math.min((box.width - 24) / extent.w, (box.height - 24) / extent.h, MAX_FIT);
    state.k = k > 0 ? k : 1;
    state.x = (box.width - extent.w * state.k) / 2;
    if (readable && state.k < MIN_READABLE) { state.k = MIN_READABLE; state.x = 12; }
    state.y = (box.height - extent.h * state.k) / 2;
    applyTransform();
  }
  /* A page drawn before it has a size (a notebook output in a frame not laid out yet)
     fits its graph when the size arrives. */
  if (window.ResizeObserver) {
    new ResizeObserver(function () { if (unsized) { fit(extent.w, extent.h, true); } })
      .observe(graphSvg);
  }
  function zoom(factor, cx, cy) {
    var k = Math.max(0.05, Math.min(8, state.k * factor));
    state.x = cx - (cx - state.x) * (k / state.k);
    state.y = cy - (cy - state.y) * (k / state.k);
    state.k = k;
    applyTransform();
  }
  graphSvg.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var box = graphSvg.getBoundingClientRect();
    zoom(ev.deltaY < 0 ? 1.15 : 1 / 1.15, ev.clientX - box.left, ev.clientY - box.top);
  }, { passive: false });
  var drag = null;
  graphSvg.addEventListener("pointerdown", function (ev) {
    if (ev.target.closest && ev.target.closest(".node")) { return; }
    drag = { x: ev.clientX - state.x, y: ev.clientY - state.y };
    graphSvg.classList.add("dragging");
  });
  window.addEventListener("pointermove", function (ev) {
    if (!drag) { return; }
    state.x = ev.clientX - drag.x; state.y = ev.clientY - drag.y; applyTransform();
  });
  window.addEventListener("pointerup", function () {
    drag = null; graphSvg.classList.remove("dragging");
  });

  var toolbar = document.getElementById("toolbar");
  [["+", function () { var b = graphSvg.getBoundingClientRect(); zoom(1.25, b.width / 2, b.height / 2); }],
   ["\u2212", function () { var b = graphSvg.getBoundingClientRect(); zoom(0.8, b.width / 2, b.height / 2); }],
   ["fit", function () { fit(extent.w, extent.h); }]].forEach(function (spec) {
    var b = el("button", "tool", spec[0]); b.type = "button";
    b.addEventListener("click", spec[1]); toolbar.appendChild(b);
  });

  function select(i) {
    buttons.forEach(function (b, j) { b.classList.toggle("active", i === j); });
    showCycle(i);
    clear(document.getElementById("details"));
    document.getElementById("details").appendChild(
      el("p", "hint", "Click an object in the graph for its details."));
    draw(views[i]);
  }
  if (views.length) { select(0); }
  document.body.setAttribute("data-ready", "1");
})();
