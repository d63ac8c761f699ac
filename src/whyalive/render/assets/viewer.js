/* whyalive offline viewer. Every string from the report is inserted with textContent;
   attributes set here hold numbers or fixed words only. Layout: Graphviz coordinates
   embedded by the writer, otherwise the vendored dagre library, top to bottom along the
   loop; the arrow that closes the loop is drawn here, back up beside it. */
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  /* Text is 12 px (16 px a line in a box): the sizes html_page.py gave the boxes. */
  var LINE_H = 16, PAD = 10, EDGE_CHAR_W = 7.3;
  var data = JSON.parse(document.getElementById("whyalive-data").textContent);
  var report = data.report;
  var views = data.views;
  /* Every sentence and size comes phrased from whyalive.words (render/html_page.py). */
  var words = data.words;
  var heavyById = {};
  (report.heavy_objects || []).forEach(function (h) { heavyById[h.node_id] = h; });
  /* Still-alive objects, then survivors only an unnamed C/C++ owner holds (listed). */
  var alives = report.alive || [], held = report.held_natively || [];
  alives.concat(held).forEach(function (a) {
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

  /* ---- the list of cycles: only when there is more than one thing to show ---- */
  var nav = document.getElementById("cycles");
  var buttons = [];
  if (views.length > 1) {
    views.forEach(function (view, i) {
      var b = el("button", "cycle-item");
      b.type = "button";
      b.appendChild(el("span", "cycle-title", view.title));
      if (cycles[i]) { b.appendChild(el("span", "cycle-meta", words.cycles[i].meta)); }
      b.addEventListener("click", function () { select(i); });
      nav.appendChild(b);
      buttons.push(b);
    });
  } else {
    nav.hidden = true;
    document.body.classList.add("single");
  }
  if (!views.length) { document.getElementById("side").appendChild(el("p", "empty", "Nothing to show.")); }

  /* ---- the side: the answer first (cut, holds, fix), then why and how ---- */
  function showCycle(i) {
    var box = document.getElementById("cycle-details");
    clear(box);
    var cycle = cycles[i];
    if (cycle) {
      var said = words.cycles[i];
      box.appendChild(el("h2", null, views[i].title));
      box.appendChild(el("p", "meta", said.meta));
      if (said.cut) { box.appendChild(labelled("cut", "Cut", said.cut)); }
      if (said.holds.length) {
        var holds = el("ul", "holds");
        var hold = function (list, h) {
          var li = el("li");
          li.appendChild(el("code", null, h.where));
          li.appendChild(document.createTextNode(": " + h.what));
          list.appendChild(li);
        };
        /* The first few, as the text's short form; the rest one click away. */
        var shown = said.holds_more ? said.holds_shown : said.holds.length;
        said.holds.slice(0, shown).forEach(function (h) { hold(holds, h); });
        if (said.holds_more) {
          var more = el("details", "more-holds");
          more.appendChild(el("summary", null, said.holds_more));
          var rest = el("ul", "holds");
          said.holds.slice(shown).forEach(function (h) { hold(rest, h); });
          more.appendChild(rest);
          var item = el("li", "more"); item.appendChild(more);
          holds.appendChild(item);
        }
        var title = el("p", "holds-title"); title.appendChild(el("strong", null, "Holds:"));
        box.appendChild(title);
        box.appendChild(holds);
      }
      box.appendChild(labelled("fix", "Fix", cycle.fix));
      box.appendChild(labelled("why", "Why", cycle.explanation));
      box.appendChild(sentence(el("p", "summary"), cycle.summary));
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
    var k = i - cycles.length;
    var alive = k < alives.length ? alives[k] : held[k - alives.length];
    if (alive) {
      box.appendChild(el("h2", null, views[i].title));
      field(box, "size", k < alives.length ? words.alive[k] : words.held[k - alives.length]);
      if (alive.root) { box.appendChild(labelled("held", "Held by", alive.root)); }
      field(box, "device", alive.device);
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
  }

  /* ---- layout ---- */
  function dagreLayout(graph) {
    var g = new dagre.graphlib.Graph({ multigraph: true });
    g.setGraph({ rankdir: "TB", nodesep: 26, ranksep: 30, marginx: 8, marginy: 8 });
    g.setDefaultEdgeLabel(function () { return {}; });
    graph.nodes.forEach(function (n) { g.setNode(n.key, { width: n.w, height: n.h }); });
    graph.edges.forEach(function (e, k) {
      if (e.closing) { return; }
      var rows = e.label ? e.label.split("\n") : [];
      g.setEdge(e.source, e.target,
        { width: Math.max.apply(null, rows.map(function (r) { return r.length; }).concat([0])) *
            EDGE_CHAR_W, height: 14 * rows.length, labelpos: "c", minlen: e.minlen || 1 },
        "e" + k);
    });
    dagre.layout(g);
    var out = { nodes: {}, edges: [], curved: false };
    graph.nodes.forEach(function (n) { var p = g.node(n.key); out.nodes[n.key] = [p.x, p.y]; });
    graph.edges.forEach(function (e, k) {
      if (e.closing) { out.edges.push(null); return; }
      var p = g.edge(e.source, e.target, "e" + k);
      out.edges.push({ points: p.points.map(function (q) { return [q.x, q.y]; }),
        label: e.label ? [p.x, p.y] : null });
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

  /* The arrow that closes the loop: from the side of its source back up to its target's
     side, outside every box between them, so the loop reads as one turn. */
  function closingGeometry(graph, layout, e) {
    var byKey = {};
    graph.nodes.forEach(function (n) { byKey[n.key] = n; });
    var s = byKey[e.source], t = byKey[e.target];
    var ps = layout.nodes[e.source], pt = layout.nodes[e.target];
    var top = Math.min(ps[1] - s.h / 2, pt[1] - t.h / 2);
    var bottom = Math.max(ps[1] + s.h / 2, pt[1] + t.h / 2);
    var left = Math.min(ps[0] - s.w / 2, pt[0] - t.w / 2);
    graph.nodes.forEach(function (n) {
      var p = layout.nodes[n.key];
      if (p && p[1] + n.h / 2 > top && p[1] - n.h / 2 < bottom && p[0] < ps[0] + s.w / 2) {
        left = Math.min(left, p[0] - n.w / 2);
      }
    });
    var a = [ps[0] - s.w / 2, ps[1]], b = [pt[0] - t.w / 2, pt[1]];
    if (e.source === e.target) {
      a = [ps[0] - s.w / 2, ps[1] + s.h / 4]; b = [ps[0] - s.w / 2, ps[1] - s.h / 4];
    }
    /* A cubic with both controls at x reaches 0.25 a + 0.75 x at its middle: put that
       middle 24 px left of every box it passes. */
    var reach = left - 24, x = (reach - 0.25 * Math.min(a[0], b[0])) / 0.75;
    return {
      d: "M" + a[0] + "," + a[1] + " C" + x + "," + a[1] + " " + x + "," + b[1] + " " +
        b[0] + "," + b[1],
      label: [reach - 6, (a[1] + b[1]) / 2 + 4], anchor: "end"
    };
  }

  /* ---- drawing, pan and zoom ---- */
  var graphSvg = document.getElementById("graph");
  var state = { x: 0, y: 0, k: 1 };
  var world = null;
  var current = { view: null, mode: "crop" };
  function applyTransform() {
    if (world) {
      world.setAttribute("transform", "translate(" + state.x + "," + state.y + ") scale(" +
        state.k + ")");
    }
  }

  function draw(view, mode) {
    current = { view: view, mode: mode };
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
    var graph = (mode === "full" && view.full) || (mode === "compact" && view.compact) ||
      view.crop;
    document.getElementById("caption").textContent = view.caption;
    var toggle = document.getElementById("toggle-fold");
    toggle.hidden = !view.full;
    toggle.textContent = mode === "full" ? "crop" : "show all";
    if (!graph.nodes.length) { return; }
    var layout = graph.layout || dagreLayout(graph);
    graph.edges.forEach(function (e, k) {
      var geo = e.closing ? closingGeometry(graph, layout, e) : layout.edges[k];
      if (!geo || e.hidden) { return; }  /* a hidden edge only ordered the layout */
      var cls = "edge" + (e.cut ? " cut" : "") + (e.closing ? " closing" : "") +
        (e.label ? "" : " quiet");
      var g = svgEl("g", { "class": cls });
      var d = geo.d || pathData(geo.points, layout.curved);
      g.appendChild(svgEl("path", { d: d,
        "marker-end": e.cut ? "url(#arrow-cut)" : "url(#arrow-plain)" }));
      if (e.label && geo.label) {
        /* A long name comes wrapped (picture.py): one line under the other, centred where
           the layout put the label. */
        var rows = e.label.split("\n");
        var t = svgEl("text", { x: geo.label[0], y: geo.label[1] - (rows.length - 1) * 7,
          "text-anchor": geo.anchor || "middle" });
        rows.forEach(function (row, r) {
          var span = svgEl("tspan", { x: geo.label[0], dy: r ? 14 : 0 });
          span.textContent = row;
          t.appendChild(span);
        });
        g.appendChild(t);
      }
      var tip = svgEl("title"); tip.textContent = (e.cut ? "suggested cut: " : "") + e.label;
      g.appendChild(tip);
      world.appendChild(g);
    });
    graph.nodes.forEach(function (n) {
      var p = layout.nodes[n.key];
      if (!p) { return; }
      var opens = view.full && mode !== "full" && (n.kind === "fold" || n.kind === "more");
      var g = svgEl("g", { "class": "node " + n.kind + (opens ? " opens" : ""),
        "data-key": n.key, transform: "translate(" + (p[0] - n.w / 2) + "," + (p[1] - n.h / 2) + ")" });
      if (n.node !== null && n.node !== undefined) { g.setAttribute("data-node", Number(n.node)); }
      /* A box that counts bytes is as prominent as its part of them (html_page.py sized it:
         text `grow` times 12 px, `border` as heavy as its share); its bytes line is bold. */
      var grow = Number(n.grow) || 1, counts = Number(n.bytes) > 0;
      if (counts) { g.setAttribute("data-bytes", Number(n.bytes)); }
      var rect = svgEl("rect", { width: n.w, height: n.h, rx: 5, ry: 5 });
      if (counts) { rect.style.strokeWidth = String(Number(n.border) || 1.5); }
      g.appendChild(rect);
      n.lines.forEach(function (line, i) {
        var size = counts && i === n.lines.length - 1;
        var t = svgEl("text", { x: PAD * grow, y: (PAD / 2 + LINE_H * (i + 1) - 4) * grow,
          "class": size ? "size" : (i ? "sub" : "main") });
        if (grow !== 1) { t.style.fontSize = (12 * grow).toFixed(2) + "px"; }
        t.textContent = line;
        g.appendChild(t);
      });
      var tip = svgEl("title");
      tip.textContent = opens ? "click to show what is folded" :
        ((report.nodes[n.node] || {}).type_name || n.lines.join(" "));
      g.appendChild(tip);
      g.addEventListener("click", function (ev) {
        ev.stopPropagation();
        if (opens) { draw(view, "full"); return; }
        if (n.node !== null && n.node !== undefined) { showNode(n.node); }
        graphSvg.querySelectorAll(".node.selected").forEach(function (x) {
          x.classList.remove("selected");
        });
        g.classList.add("selected");
      });
      world.appendChild(g);
    });
    return fit(true);
  }

  /* The cropped picture, or the compact one (each holder path one arrow) when the pane is
     too narrow or short to show the cropped one whole at a readable size. */
  function open(view) {
    if (!draw(view, "crop") && !unsized && view.compact) { draw(view, "compact"); }
  }

  /* Text is 12 px at scale 1: a picture opens no smaller than 11 px text and no larger
     than 1.3 times. One that will not fit whole at that size opens on what answers the
     question: the cut and every box that counts bytes (heavy and "more" boxes). */
  var MIN_READABLE = 11 / 12, MAX_FIT = 1.3, MARGIN = 16;
  var unsized = false;
  function boxOf(elements) {
    var box = null;
    elements.forEach(function (e) {
      var b = e.getBBox();
      var m = e.transform && e.transform.baseVal.numberOfItems ?
        e.transform.baseVal.getItem(0).matrix : { e: 0, f: 0 };
      var x0 = b.x + m.e, y0 = b.y + m.f, x1 = x0 + b.width, y1 = y0 + b.height;
      box = box ? { x0: Math.min(box.x0, x0), y0: Math.min(box.y0, y0),
        x1: Math.max(box.x1, x1), y1: Math.max(box.y1, y1) } : { x0: x0, y0: y0, x1: x1, y1: y1 };
    });
    return box;
  }
  /* Returns whether the whole picture fits at a readable size. */
  function fit(readable) {
    if (!world) { return true; }
    var pane = graphSvg.getBoundingClientRect();
    unsized = pane.width < 1 || pane.height < 1;
    if (unsized) { return false; }
    var all = boxOf(Array.prototype.slice.call(world.children));
    if (!all) { return true; }
    var top = document.getElementById("caption").offsetHeight + 8;
    var bottom = document.getElementById("legend").offsetHeight + 8;
    var w = pane.width - 2 * MARGIN, h = pane.height - 2 * MARGIN - top - bottom;
    var k = Math.min(w / (all.x1 - all.x0), h / (all.y1 - all.y0), MAX_FIT);
    var focus = all, whole = k >= MIN_READABLE;
    if (readable && !whole) {
      k = MIN_READABLE;
      var key = Array.prototype.slice.call(
        world.querySelectorAll(".edge.cut, .node[data-bytes]"));
      focus = boxOf(key) || all;
    }
    /* Centre the whole picture along each axis it fits in; otherwise what answers. */
    var across = (all.x1 - all.x0) * k <= w ? all : focus;
    var down = (all.y1 - all.y0) * k <= h ? all : focus;
    state.k = k;
    state.x = MARGIN + (w - (across.x1 - across.x0) * k) / 2 - across.x0 * k;
    state.y = MARGIN + top + (h - (down.y1 - down.y0) * k) / 2 - down.y0 * k;
    applyTransform();
    return whole;
  }
  /* A page drawn before it has a size (a notebook output in a frame not laid out yet), or
     resized before the user moved the picture, fits its picture to the new size. */
  var touched = false;
  if (window.ResizeObserver) {
    new ResizeObserver(function () {
      if ((unsized || !touched) && current.view) {
        if (current.mode === "full") { fit(true); } else { open(current.view); }
      }
    }).observe(graphSvg);
  }
  function zoom(factor, cx, cy) {
    touched = true;
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
    touched = true;
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
  function tool(text, action, id) {
    var b = el("button", "tool", text); b.type = "button";
    if (id) { b.id = id; }
    b.addEventListener("click", action); toolbar.appendChild(b);
    return b;
  }
  tool("+", function () { var b = graphSvg.getBoundingClientRect(); zoom(1.25, b.width / 2, b.height / 2); });
  tool("\u2212", function () { var b = graphSvg.getBoundingClientRect(); zoom(0.8, b.width / 2, b.height / 2); });
  tool("fit", function () { fit(false); });
  tool("show all", function () {
    if (!current.view) { return; }
    if (current.mode === "full") { open(current.view); } else { draw(current.view, "full"); }
  }, "toggle-fold");

  function select(i) {
    buttons.forEach(function (b, j) { b.classList.toggle("active", i === j); });
    showCycle(i);
    clear(document.getElementById("details"));
    document.getElementById("details").appendChild(
      el("p", "hint", "Click a box in the picture for its details."));
    open(views[i]);
  }
  if (views.length) { select(0); }
  document.body.setAttribute("data-ready", "1");
})();
