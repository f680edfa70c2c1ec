/*
 * The page of `vramtrace report --html` (docs/user/REPORT.md, "HTML report").
 * Everything it shows comes from three JSON blocks the analyzer wrote into
 * the page: #vt-report (the report's JSON document, docs/report.schema.json),
 * #vt-timeline (each ledger's series, downsampled in C: replay/timeline.h;
 * each snapshot device's allocated and reserved: snapshot/snapshot_series.h)
 * and #vt-options. Charts: uPlot (timelines) and d3-flame-graph (live sets),
 * inlined beside this script at build time. Nothing is fetched.
 */
(function () {
  "use strict";

  var report = JSON.parse(document.getElementById("vt-report").textContent);
  var timeline = JSON.parse(document.getElementById("vt-timeline").textContent);
  var options = JSON.parse(document.getElementById("vt-options").textContent);
  var jobPage = JSON.parse(document.getElementById("vt-job").textContent);
  var app = document.getElementById("app");
  var flamegraphFactory = window.flamegraph && (window.flamegraph.default || window.flamegraph);

  var SITE_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948",
                     "#9c755f", "#ff9da7"];
  var OTHER_COLOR = "#bab0ac";
  var PHASE_COLORS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02",
                      "#a6761d", "#666666"];

  /* ---- formatting: as the text report (common/format.c) ---- */

  /* Two decimals, a half rounded away from zero on the exact value: below
   * 2^53 bytes b / 1024^k is exact in a double and toFixed takes the larger
   * of two equally near results, as vt_format_bytes does in integers
   * (12482248704 bytes, exactly 11.625 GiB, is "11.63 GiB" in every view). */
  function fmtBytes(b) {
    if (b === null || b === undefined) return "unknown";
    if (b < 1024) return b + " B";
    var units = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    var v = b / 1024, u = 0;
    while (v >= 1024 && u < 4) { v /= 1024; u++; }
    return v.toFixed(2) + " " + units[u];
  }
  /* Signed seconds, three decimals, from integer nanoseconds, a half
   * rounded away from zero: as vt_format_seconds. */
  function fmtNs(ns) {
    var a = Math.abs(ns), ms = Math.floor(a / 1e6) + (a % 1e6 >= 5e5 ? 1 : 0);
    return (ns < 0 ? "-" : "+") + Math.floor(ms / 1000) + "." + String(ms % 1000).padStart(3, "0") + "s";
  }
  function fmtSecs(s) { return fmtNs(Math.round(s * 1e9)); }
  /* A y-axis label: the value in its unit with only the decimals it needs
   * (the ticks are multiples of a power of two: "768 MiB", "1.5 GiB"). */
  function fmtAxisBytes(b) {
    if (b < 1024) return b + " B";
    var units = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    var v = b / 1024, u = 0;
    while (v >= 1024 && u < 4) { v /= 1024; u++; }
    return String(+v.toFixed(4)) + " " + units[u];
  }
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "cls") e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    (children || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  function frameName(f) {
    var name = f.function || (f.module ? f.module + "+0x" + (f.ip || 0).toString(16) : "0x" + (f.ip || 0).toString(16));
    if (f.file) name += " (" + f.file.split("/").pop() + (f.line ? ":" + f.line : "") + ")";
    return name;
  }
  /* The first frame of the program's own: past the allocators and runtimes. */
  function noFrames(site) {
    if (site && site.before_trace) return "allocated before the trace window";
    if (site && site.stack_id !== undefined) return "stack " + site.stack_id;
    return "no frames recorded";
  }
  /* A site as the text report names it (docs/user/REPORT.md, "Stacks"): the
   * program's own frames - its Python frames where recorded - past the
   * frames the report folds (the JSON's "folded"); the first two, so that
   * sites through one helper (device_alloc, tensor) read apart:
   * "tensor (example.c:41) <- build_model:64". */
  function ownFrames(site) {
    var fs = site.frames, py = fs.some(function (f) { return f.module === "python"; });
    return fs.filter(function (f) { return !f.folded && (!py || f.module === "python"); });
  }
  function shortFrame(f) {
    return (f.function || frameName(f)) + (f.line ? ":" + f.line : "");
  }
  function siteLabel(site) {
    if (!site || !site.frames || !site.frames.length) return noFrames(site);
    var own = ownFrames(site);
    if (!own.length) return frameName(site.frames[0]);
    return frameName(own[0]) + (own.length > 1 ? " <- " + shortFrame(own[1]) : "");
  }
  /* A site's stack without the frames the text report folds (the runtime,
   * the allocators, libc's start-up...), said in one line after it. */
  function stackText(site) {
    if (!site || !site.frames) return "";
    var own = site.frames.filter(function (f) { return !f.folded; });
    if (!own.length) return site.frames.map(frameName).join("\n  <- ");
    var kinds = [];
    site.frames.forEach(function (f) { if (f.folded && kinds.indexOf(f.folded_as) < 0) kinds.push(f.folded_as); });
    var folded = site.frames.length - own.length;
    return own.map(frameName).join("\n  <- ") + (folded ? "\n  (" + folded + " frame" + (folded > 1 ? "s" : "") +
      " folded: " + kinds.join(", ") + ")" : "");
  }

  /* ---- the live set as a flame graph, and the table beside it ---- */

  /* Sites (innermost frame first) into a tree from the outermost frame;
   * what the listed sites do not cover of `total` is one "other" child. */
  function liveTree(title, sites, total) {
    var root = { name: title, value: 0, children: [] };
    var sum = 0;
    sites.forEach(function (s) {
      sum += s.bytes;
      var node = root;
      /* Outermost first, ending at the frame that names the site (its
       * label's): the call's runtime, allocator and ctypes frames are left
       * off the tip, as the folded export leaves them (export_folded.c
       * says why); a stack of nothing but folded frames is drawn whole. */
      var all = s.frames || [], own = ownFrames(s);
      var tip = own.length ? all.indexOf(own[0]) : 0;
      /* and the frames the text report folds outside it (libc's start-up
       * above main, the interpreter's own) */
      var frames = (own.length ? all.slice(tip).filter(function (f) { return !f.folded; }) : all).reverse();
      if (!frames.length) frames = [{ function: noFrames(s) }];
      frames.forEach(function (f) {
        var name = frameName(f);
        var child = null;
        for (var i = 0; i < node.children.length; i++)
          if (node.children[i].name === name) { child = node.children[i]; break; }
        if (!child) { child = { name: name, value: 0, children: [] }; node.children.push(child); }
        child.value += s.bytes;
        node = child;
      });
    });
    if (total > sum)
      root.children.push({ name: "other sites (not listed)", value: total - sum, children: [] });
    root.value = Math.max(total, sum);
    return root;
  }

  function sitesTable(sites, rows, total) {
    var t = el("table", { cls: "vt-sites" });
    t.appendChild(el("tr", {}, [el("th", { text: "bytes" }), el("th", { text: "share" }),
      el("th", { text: "count" }), el("th", { text: "thread" }), el("th", { text: "allocated at" })]));
    sites.slice(0, rows).forEach(function (s) {
      var tr = el("tr", {}, [
        el("td", { cls: "num", text: fmtBytes(s.bytes) }),
        el("td", { cls: "num", text: total ? (100 * s.bytes / total).toFixed(1) + "%" : "" }),
        el("td", { cls: "num", text: s.count !== undefined ? String(s.count) : "" }),
        el("td", { text: s.thread || (s.backward ? "backward" : "") }),
        el("td", { cls: "stack", text: siteLabel(s), title: stackText(s) })]);
      t.appendChild(tr);
    });
    if (sites.length > rows)
      t.appendChild(el("tr", {}, [el("td", { colspan: "5", cls: "note",
        text: (sites.length - rows) + " more sites in the flame graph" })]));
    return t;
  }

  var flameId = 0;
  /* views: [{label, title, sites, total}] */
  function liveSetView(views) {
    var box = el("div", { cls: "vt-live" });
    if (!views.length) return box;
    var select = el("select", { cls: "vt-live-select" });
    views.forEach(function (v, i) { select.appendChild(el("option", { value: String(i), text: v.label })); });
    var search = el("input", { type: "search", placeholder: "search a frame", cls: "vt-search" });
    var reset = el("button", { type: "button", text: "reset zoom" });
    var details = el("div", { cls: "vt-flame-details" });
    var flame = el("div", { cls: "vt-flame", id: "vt-flame-" + (flameId++) });
    var table = el("div", { cls: "vt-table" });
    box.appendChild(el("div", { cls: "vt-controls" }, [el("span", { text: "live set " }), select, search, reset]));
    box.appendChild(el("div", { cls: "vt-flame-row" }, [el("div", { cls: "vt-flame-col" }, [flame, details]), table]));
    var chart = null;
    function show(i) {
      var v = views[i];
      flame.innerHTML = "";
      var width = Math.max(320, flame.clientWidth || 640);
      var tree = liveTree(v.title, v.sites, v.total);
      chart = flamegraphFactory()
        .width(width)
        .cellHeight(18)
        .minFrameSize(1)
        .transitionDuration(150)
        .inverted(true)
        .selfValue(false)
        .setDetailsElement(details)
        .label(function (d) { return d.data.name + ": " + fmtBytes(d.value); })
        .setSearchMatch(function (d, term) {
          return !!term && d.data.name.toLowerCase().indexOf(term.toLowerCase()) >= 0;
        })
        .setSearchHandler(function (results, sum, totalValue) {
          details.textContent = search.value ? "search \"" + search.value + "\": " + fmtBytes(sum) +
            " of " + fmtBytes(totalValue) + " in matching frames" : "";
        });
      window.d3.select(flame).datum(tree).call(chart);
      var root = window.d3.select(flame).datum();
      flame.setAttribute("data-root-bytes", String(root.value));
      flame.setAttribute("data-view", v.label);
      table.innerHTML = "";
      table.appendChild(el("div", { cls: "vt-table-title", text: v.title + ": " + fmtBytes(v.total) }));
      table.appendChild(sitesTable(v.sites, options.table_rows || 10, v.total));
      if (search.value) chart.search(search.value);
    }
    select.addEventListener("change", function () { show(+select.value); });
    search.addEventListener("input", function () {
      if (!chart) return;
      if (search.value) chart.search(search.value); else chart.clear();
    });
    reset.addEventListener("click", function () { if (chart) chart.resetZoom(); });
    box._show = show;
    box._select = select;
    return box;
  }

  /* ---- the timeline of one ledger ---- */

  function tooltipBox() {
    var t = document.getElementById("vt-tooltip");
    if (!t) { t = el("div", { id: "vt-tooltip", cls: "vt-tooltip" }); document.body.appendChild(t); }
    return t;
  }
  function showTip(text, x, y) {
    var t = tooltipBox();
    t.textContent = text;
    t.style.display = "block";
    t.style.left = Math.min(x + 12, window.innerWidth - 420) + "px";
    t.style.top = (y + 12 + window.scrollY) + "px";
  }
  function hideTip() { tooltipBox().style.display = "none"; }

  /* "device 0 (NVIDIA A100-SXM4-80GB)". A size at the end of the GPU's
   * name in parentheses ("Simulated GPU 0 (0.78 GiB)") is left off where
   * the capacity is known: the heading says it once, in the report's units. */
  function gpuName(dev) {
    return dev.total_bytes ? dev.name.replace(/\s*\(\s*[\d.]+\s*[KMGTP]i?B\s*\)\s*$/, "") : dev.name;
  }
  function ledgerTitle(dev) {
    var kind = dev.kind === "device" ? "device" : dev.kind === "managed" ? "managed" : "pinned host";
    return kind + (dev.device !== null && dev.kind !== "host_pinned" ? " " + dev.device : "") +
      (dev.name ? " (" + gpuName(dev) + ")" : "");
  }

  function findSite(dev, s) {
    var all = dev.peak_breakdown || [];
    for (var i = 0; i < all.length; i++)
      if (all[i].stack_id === s.stack_id && all[i].thread === s.thread) return all[i];
    return { stack_id: s.stack_id, thread: s.thread, frames: [] };
  }

  /* ---- a memory chart: the timelines of a ledger and of a snapshot ---- */

  /* Seconds on the x axis, with as many decimals as the ticks' spacing needs. */
  function secondTicks(u, vals) {
    var step = vals.length > 1 ? Math.abs(vals[1] - vals[0]) : 1;
    var dec = Math.min(9, Math.max(3, Math.ceil(-Math.log10(step || 1))));
    return vals.map(function (v) { return (v >= 0 ? "+" : "") + v.toFixed(dec) + "s"; });
  }
  var ENTRY_INCRS = [];
  for (var p10 = 1; p10 <= 1e12; p10 *= 10) ENTRY_INCRS.push(p10, 2 * p10, 5 * p10);
  /* y ticks a power of two of bytes apart: round figures in binary units */
  var BYTE_INCRS = [];
  for (var p2 = 1; p2 <= Math.pow(2, 60); p2 *= 2) BYTE_INCRS.push(p2);
  /* The y axis as wide as its longest label, so that none is clipped. */
  var measureCtx = null;
  function bytesAxisSize(u, values) {
    if (!values || !values.length) return 50;
    measureCtx = measureCtx || document.createElement("canvas").getContext("2d");
    var font = u.axes[1].font, dpr = window.devicePixelRatio || 1;
    measureCtx.font = Array.isArray(font) ? font[0] : font;
    var w = 0;
    values.forEach(function (v) { w = Math.max(w, measureCtx.measureText(String(v)).width / dpr); });
    return Math.ceil(w) + 24; /* the tick, the gap and a margin */
  }

  /* spec: {xs, xLabel, xValue(x) -> text, xEntries (integer x: trace
   * entries, else seconds), layers: [{label, key, color, stroke, top: [...],
   * value(i) -> text}] (top first: each filled to zero over the ones before
   * it), yMax, rest: {index, what} (the point the legend shows while the
   * cursor is off the chart: the peak), peaks: [{x, text, color, attrs}],
   * failures: [{x, tip, attrs}], phases: [{name, spans: [[x0, x1]...],
   * title, text}], trend: null | {points: [[x, y]...], x0, x1, text, attrs}
   * (a growth, drawn as a line through its steps), hover(i, y, open) -> text, idle (what the box below
   * the chart is for, said until the cursor is on it), note}. Drag or wheel
   * to zoom, shift+drag to pan, double-click to reset. */
  var LANE = 14; /* px: one phase lane above the plot, its name left of it */
  /* One colour for every lane: each lane is named, and the sites' and the
   * parts' colours stay theirs alone. */
  var LANE_COLOR = "#4d4d4d", LANE_TRACK = "#ececec", TREND_COLOR = "#7a0177";
  function memoryChart(spec) {
    var box = el("div", { cls: "vt-timeline" });
    var xs = spec.xs, n = xs.length, phases = spec.phases || [];
    var data = [xs];
    var uSeries = [{ label: spec.xLabel }];
    spec.layers.forEach(function (l) {
      data.push(l.top);
      uSeries.push({ label: l.label, fill: l.color, stroke: l.stroke || l.color, width: 1,
        paths: window.uPlot.paths.stepped({ align: 1 }), points: { show: false } });
    });
    /* above the plot: the phase lanes, then a row for the failures' markers */
    var padTop = phases.length || spec.failures.length ? phases.length * LANE + 18 : null;
    var hover = el("div", { cls: "vt-hover vt-hover-idle", text: spec.idle });
    var overlay = el("div", { cls: "vt-overlay" });
    function label(cls, p) {
      var attrs = { cls: cls, text: p.text };
      for (var a in p.attrs || {}) attrs[a] = p.attrs[a];
      return el("div", attrs);
    }
    var peakLabels = spec.peaks.map(function (p) {
      var l = label("vt-peak-label", p);
      if (p.color) l.style.borderColor = p.color;
      return l;
    });
    var trendLabel = spec.trend ? label("vt-trend-label", spec.trend) : null;
    var laneLabels = phases.map(function (p, pi) {
      return el("div", { cls: "vt-lane-label", "data-name": p.name, "data-lane": String(pi),
                         "data-color": LANE_COLOR, title: p.name + ": " + p.title, text: p.name });
    });
    var markers = spec.failures.map(function (f, i) {
      var attrs = { cls: "vt-oom-marker", "data-index": String(i), text: "\u25bc" };
      for (var a in f.attrs || {}) attrs[a] = f.attrs[a];
      var m = el("div", attrs);
      m.addEventListener("mouseenter", function (e) { showTip(f.tip, e.clientX, e.clientY); });
      m.addEventListener("mouseleave", hideTip);
      return m;
    });
    markers.concat(peakLabels, laneLabels, trendLabel ? [trendLabel] : []).forEach(function (m) { overlay.appendChild(m); });

    /* The legend: each layer's colour, name and bytes - at the cursor, or
     * at spec.rest (the peak) while the cursor is off the chart. */
    var legend = el("div", { cls: "vt-legend" });
    var legendAt = el("span", { cls: "vt-legend-at" });
    legend.appendChild(legendAt);
    var legendValues = spec.layers.map(function (l) {
      var sw = el("span", { cls: "vt-swatch" });
      sw.style.background = l.color;
      sw.style.borderColor = l.stroke || l.color;
      var v = el("span", { cls: "vt-legend-value" });
      legend.appendChild(el("span", { cls: "vt-legend-item", "data-key": l.key || l.label, "data-color": l.color },
                            [sw, el("span", { cls: "vt-legend-label", text: l.label }), v]));
      return v;
    });
    function showLegend(i, atCursor) {
      legendAt.textContent = (atCursor ? "at " + spec.xValue(xs[i]) : spec.rest.what + ", " + spec.xValue(xs[i])) + ":";
      legend.setAttribute("data-at", atCursor ? "cursor" : "rest");
      legend.setAttribute("data-index", String(i));
      spec.layers.forEach(function (l, k) { legendValues[k].textContent = l.value(i); });
    }
    showLegend(spec.rest.index, false);

    function drawExtras(u) {
      var ctx = u.ctx, bb = u.bbox, dpr = window.devicePixelRatio || 1;
      ctx.save();
      /* the phase lanes, above the plot */
      phases.forEach(function (p, pi) {
        var y = bb.top - (padTop - 2 - pi * LANE) * dpr, h = (LANE - 4) * dpr;
        ctx.fillStyle = LANE_TRACK;
        ctx.fillRect(bb.left, y, bb.width, h);
        ctx.fillStyle = LANE_COLOR;
        p.spans.forEach(function (sp) {
          var a = u.valToPos(sp[0], "x", true);
          var b = u.valToPos(sp[1], "x", true);
          if (b < bb.left || a > bb.left + bb.width) return;
          a = Math.max(a, bb.left); b = Math.min(b, bb.left + bb.width);
          ctx.fillRect(a, y, Math.max(b - a, dpr), h);
        });
      });
      /* the growth: a solid line over the steps it rose at */
      if (spec.trend) {
        ctx.strokeStyle = TREND_COLOR;
        ctx.lineWidth = 2 * dpr;
        ctx.beginPath();
        spec.trend.points.forEach(function (pt, k) {
          var px = u.valToPos(pt[0], "x", true), py = u.valToPos(pt[1], "y", true);
          if (k) ctx.lineTo(px, py); else ctx.moveTo(px, py);
        });
        ctx.stroke();
      }
      /* the peaks and the failures */
      ctx.setLineDash([4 * dpr, 3 * dpr]);
      ctx.lineWidth = dpr;
      spec.peaks.forEach(function (p) {
        ctx.strokeStyle = p.color || "#000";
        var px = u.valToPos(p.x, "x", true);
        ctx.beginPath(); ctx.moveTo(px, bb.top); ctx.lineTo(px, bb.top + bb.height); ctx.stroke();
      });
      ctx.strokeStyle = "#d62728";
      spec.failures.forEach(function (f) {
        var ox = u.valToPos(f.x, "x", true);
        if (ox < bb.left || ox > bb.left + bb.width) return;
        ctx.beginPath(); ctx.moveTo(ox, bb.top); ctx.lineTo(ox, bb.top + bb.height); ctx.stroke();
      });
      ctx.restore();
      /* DOM labels, placed in CSS pixels */
      var left = u.over.offsetLeft, top = u.over.offsetTop, w = u.over.clientWidth;
      /* right of x, or left of it where the plot ends */
      function place(l, lx) {
        l.style.left = (lx + 4 + l.offsetWidth <= w ? left + lx + 4 : Math.max(left, left + lx - 4 - l.offsetWidth)) + "px";
      }
      spec.peaks.forEach(function (p, k) {
        var lx = u.valToPos(p.x, "x");
        var l = peakLabels[k];
        l.style.display = lx >= 0 && lx <= w ? "block" : "none";
        place(l, lx);
        l.style.top = (top + 2 + 22 * k) + "px";
      });
      if (trendLabel) {
        var t0 = u.valToPos(spec.trend.x0, "x"), t1 = u.valToPos(spec.trend.x1, "x");
        trendLabel.style.display = t1 >= 0 && t0 <= w ? "block" : "none";
        place(trendLabel, Math.max(0, t0));
        trendLabel.style.top = (top + 2 + 22 * spec.peaks.length) + "px";
      }
      laneLabels.forEach(function (l, pi) {
        l.style.width = Math.max(0, left - 8) + "px";
        l.style.top = (top - padTop + pi * LANE) + "px";
      });
      /* failures closer than a marker's width (a failed retry right after
       * its failure) side by side, not one over the other */
      var next = -Infinity;
      markers.forEach(function (m, i) {
        var mx = u.valToPos(spec.failures[i].x, "x");
        m.style.display = mx >= 0 && mx <= w ? "block" : "none";
        if (m.style.display === "none") return;
        var at = Math.max(left + mx - 6, next);
        m.style.left = at + "px";
        m.style.top = (top - 15) + "px";
        next = at + m.offsetWidth + 1;
      });
    }

    function onCursor(u) {
      var i = u.cursor.idx;
      if (i === null || i === undefined || u.cursor.left < 0) {
        hover.textContent = spec.idle;
        hover.classList.add("vt-hover-idle");
        showLegend(spec.rest.index, false);
        return;
      }
      var open = phases.filter(function (p) {
        return p.spans.some(function (sp) { return sp[0] <= xs[i] && xs[i] <= sp[1]; });
      }).map(function (p) { return p.name; });
      hover.classList.remove("vt-hover-idle");
      hover.textContent = spec.hover(i, u.posToVal(u.cursor.top, "y"), open);
      showLegend(i, true);
    }

    /* wheel zooms around the cursor, shift+drag pans */
    function zoomPan(u) {
      var over = u.over;
      over.addEventListener("wheel", function (e) {
        e.preventDefault();
        var min = u.scales.x.min, max = u.scales.x.max, x = u.posToVal(e.offsetX, "x");
        var f = e.deltaY < 0 ? 0.75 : 1 / 0.75;
        var lo = x - (x - min) * f, hi = x + (max - x) * f;
        var full0 = xs[0], full1 = xs[n - 1];
        if (hi - lo >= full1 - full0) { lo = full0; hi = full1; }
        u.setScale("x", { min: Math.max(lo, full0 - (full1 - full0)), max: hi });
      }, { passive: false });
      over.addEventListener("mousedown", function (e) {
        if (!e.shiftKey) return;
        e.stopImmediatePropagation(); /* not uPlot's drag-to-zoom */
        var x0 = e.clientX, min = u.scales.x.min, max = u.scales.x.max;
        var perPx = (max - min) / over.clientWidth;
        function move(ev) {
          var d = (ev.clientX - x0) * perPx;
          u.setScale("x", { min: min - d, max: max - d });
        }
        function up() { document.removeEventListener("mousemove", move); document.removeEventListener("mouseup", up); }
        document.addEventListener("mousemove", move);
        document.addEventListener("mouseup", up);
      }, true);
      over.addEventListener("mouseleave", function () { onCursor({ cursor: { idx: null } }); });
    }

    /* the y axis as wide as its longest tick label and the lanes' names */
    function axisSize(u, values) {
      var w = bytesAxisSize(u, values);
      if (!phases.length) return w;
      measureCtx = measureCtx || document.createElement("canvas").getContext("2d");
      measureCtx.font = "11px " + getComputedStyle(document.body).fontFamily;
      phases.forEach(function (p) { w = Math.max(w, Math.ceil(measureCtx.measureText(p.name).width) + 14); });
      return Math.min(w, 160);
    }

    var legendPhases = el("div", { cls: "vt-phases" });
    if (phases.length) legendPhases.appendChild(el("span", { cls: "vt-phases-what", text: "phases, the lanes above the plot (peak while open):" }));
    phases.forEach(function (p) {
      legendPhases.appendChild(el("span", { cls: "vt-phase", "data-name": p.name, title: p.title, text: p.text }));
    });

    var plotBox = el("div", { cls: "vt-plot" });
    box.appendChild(legendPhases);
    box.appendChild(el("div", { cls: "vt-plot-wrap" }, [plotBox, overlay]));
    box.appendChild(legend);
    box.appendChild(hover);
    box.appendChild(el("div", { cls: "note", text: "drag to zoom, wheel to zoom, shift+drag to pan, double-click to reset; " + spec.note }));

    box._phases = phases;
    box._mount = function () {
      var width = Math.max(400, plotBox.clientWidth || 900);
      var xAxis = spec.xEntries ? { space: 80, incrs: ENTRY_INCRS, values: function (u, vals) {
                    return vals.map(function (v) { return String(v); }); } }
                  : { space: 80, values: secondTicks };
      var u = new window.uPlot({
        width: width, height: 320 + (padTop || 0),
        padding: [padTop, null, null, null],
        scales: { x: { time: false }, y: { range: function (u, lo, hi) {
          /* room above the peaks for their labels */
          return [0, Math.max(hi, spec.yMax) * (1.12 + 0.07 * Math.max(0, spec.peaks.length - 1) + (spec.trend ? 0.08 : 0))]; } } },
        axes: [xAxis, { size: axisSize, space: 36, incrs: BYTE_INCRS,
                        values: function (u, vals) { return vals.map(fmtAxisBytes); } }],
        series: uSeries,
        cursor: { drag: { x: true, y: false }, points: { show: false } },
        legend: { show: false },
        hooks: { draw: [drawExtras], setCursor: [onCursor], ready: [zoomPan],
                 setScale: [function (u, key) {
                   if (key === "x") { plotBox.setAttribute("data-x-min", u.scales.x.min); plotBox.setAttribute("data-x-max", u.scales.x.max); }
                 }] },
      }, data, plotBox);
      box._uplot = u;
    };
    return box;
  }

  /* ---- the timeline of one ledger: bytes live, stacked by site ---- */

  /* The series drawn to the end of the axis, t1_ns: the process's last
   * event that carries data (a change, a failure, a phase boundary or a
   * mark: vt_replay_data_end in analyzer/replay/replay.h). Each value holds
   * until the next point, so the last one gets a point at the end - past
   * it by a sliver when the last event is itself a change (a process
   * stopped right after an allocation would else draw its memory zero
   * wide). */
  function toLastEvent(tp, series) {
    var n = series.t.length, end = tp.t1_ns - tp.t0_ns;
    if (!n) return series;
    var last = series.t[n - 1];
    if (last >= end) end = last + Math.max(1, Math.round((last - series.t[0]) / 25));
    function hold(col) { return col.concat([col[n - 1]]); }
    var parts = null;
    if (series.part_bytes) {
      parts = {};
      Object.keys(series.part_bytes).forEach(function (k) { parts[k] = hold(series.part_bytes[k]); });
    }
    return { device: series.device, kind: series.kind, sites: series.sites, t: series.t.concat([end]),
             total: hold(series.total), site_bytes: series.site_bytes.map(hold), part_bytes: parts,
             growth_steps: series.growth_steps || null };
  }

  /* The first point of the largest value: the peak, as the series keeps it. */
  function maxIndex(values) {
    var at = 0;
    values.forEach(function (v, i) { if (v > values[at]) at = i; });
    return at;
  }

  /* The device's growth (the report's "growth": PyTorch's allocator's
   * bytes at each step's closing; docs/user/REPORT.md, "Growth") as a line
   * over the steps it rose at - from the run's first closing at its first
   * bytes to the latest at its last - and its finding as the line's label.
   * Null where nothing grows or the closings' times were not kept. */
  function growthSentence(g) {
    var top = (g.sites || [])[0];
    return "+" + fmtBytes(g.per_step_bytes) + " a step from step " + g.from_step +
      (top ? " at " + siteLabel(top) : "") + (g.level === "allocated" ? "" : " (the cache grows, the tensors do not)");
  }
  function growthTrend(dev, tp, series, origin) {
    var g = dev.growth, st = series.growth_steps;
    if (!g || !st || !st.t.length) return null;
    /* at each step's closing, the bytes the rate gives from the run's
     * first closing (from_step - 1), ending at the figure measured last */
    var points = st.t.map(function (t, k) {
      var steps = st.first_step + k - (g.from_step - 1);
      return [origin + t / 1e9, k === st.t.length - 1 ? g.last_bytes : Math.min(g.last_bytes, g.first_bytes + steps * g.per_step_bytes)];
    });
    return { points: points, x0: points[0][0], x1: points[points.length - 1][0],
             text: "growth " + growthSentence(g), attrs: { "data-per-step-bytes": String(g.per_step_bytes),
               "data-from-step": String(g.from_step), "data-first-step": String(st.first_step),
               "data-steps-drawn": String(points.length), "data-last-bytes": String(g.last_bytes),
               "data-to-ns": String(tp.t0_ns + st.t[st.t.length - 1]) } };
  }

  function timelineChart(proc, dev, tp, series) {
    var origin = (tp.t0_ns - tp.origin_ns) / 1e9;
    series = toLastEvent(tp, series);
    var xs = series.t.map(function (t) { return origin + t / 1e9; });
    var sites = series.sites.map(function (s) { return findSite(dev, s); });
    var n = xs.length, k = sites.length;
    var raw = [], cum = [];
    var acc = new Array(n).fill(0);
    for (var s = 0; s < k; s++) {
      var col = series.site_bytes[s];
      raw.push(col);
      acc = acc.map(function (a, i) { return a + col[i]; });
      cum.push(acc);
    }
    var other = series.total.map(function (t, i) { return t - (k ? cum[k - 1][i] : 0); });
    /* drawn top first, each filled to zero over the one above it */
    var layers = [{ label: "other", key: "other", color: OTHER_COLOR, stroke: "#8a817c", top: series.total,
                    value: function (i) { return fmtBytes(other[i]); } }];
    for (s = k - 1; s >= 0; s--) {
      (function (s) {
        layers.push({ label: siteLabel(sites[s]), key: "site " + series.sites[s].stack_id + " " + series.sites[s].thread,
                      color: SITE_COLORS[s % SITE_COLORS.length], top: cum[s],
                      value: function (i) { return fmtBytes(raw[s][i]); } });
      })(s);
    }
    var peakX = (dev.peak_time_ns - tp.origin_ns) / 1e9, peakAt = fmtNs(dev.peak_time_ns - tp.origin_ns);
    var failures = (dev.ooms || []).map(function (o, i) {
      var x = (o.time_ns - tp.origin_ns) / 1e9;
      return { x: x, attrs: { "data-verdict": o.verdict, "data-requested-bytes": String(o.requested_bytes) },
               tip: "allocation failure #" + (i + 1) + " at " + fmtNs(o.time_ns - tp.origin_ns) + ": " + o.verdict +
                    (o.retry_of_previous ? " (failed retry)" : "") + "\n" + o.narrative + "\n\n" + (o.next_step || "") };
    });
    var phases = (tp.phases || []).map(function (p) {
      var devPhase = (dev.phases || []).filter(function (q) { return q.name === p.name; })[0];
      return { name: p.name, spans: p.spans.map(function (sp) { return [origin + sp[0] / 1e9, origin + sp[1] / 1e9]; }),
               title: p.spans.length + " span(s) drawn" + (devPhase ? "; peak while open " + fmtBytes(devPhase.peak_bytes) : ""),
               text: p.name + (devPhase ? " (peak " + fmtBytes(devPhase.peak_bytes) + ")" : "") };
    });
    function hover(i, y, open) {
      var under = "other sites";
      var site = null;
      for (var s = 0; s < k; s++)
        if (y <= cum[s][i]) { under = siteLabel(sites[s]); site = sites[s]; break; }
      return fmtSecs(xs[i]) + ": " + fmtBytes(series.total[i]) + " live" +
        (open.length ? " [" + open.join(", ") + "]" : "") + "\nunder the cursor: " +
        under + (site ? " " + fmtBytes(raw[sites.indexOf(site)][i]) + "\n  " + stackText(site) :
        " " + fmtBytes(other[i]));
    }
    return memoryChart({ xs: xs, xLabel: "time", xValue: fmtSecs, layers: layers, yMax: dev.peak_bytes,
      rest: { index: maxIndex(series.total), what: "at the peak" },
      peaks: [{ x: peakX, text: "peak " + fmtBytes(dev.peak_bytes) + " at " + peakAt,
                attrs: { "data-bytes": String(dev.peak_bytes), "data-time-ns": String(dev.peak_time_ns) } }],
      failures: failures, phases: phases, hover: hover, trend: growthTrend(dev, tp, series, origin),
      idle: "under the cursor: point at the chart for the time, the bytes live then, the phases open, " +
        "and the site under the pointer with its stack",
      note: "each column of pixels keeps its maximum (exact, split by site) and its last value" });
  }

  /* ---- the same timeline stacked by part (docs/user/PYTORCH.md, "Parts"):
   * parameters, buffers, gradients, optimizer state by the census nearest
   * each point, and the rest of the bytes live (segment level) ---- */

  var PARTS = [["parameters", "parameters", "#3a7ca5"], ["buffers", "buffers", "#81c3d7"],
               ["gradients", "gradients", "#d9a441"], ["optimizer_state", "optimizer state", "#c44536"]];

  function partsChart(proc, dev, tp, series) {
    var origin = (tp.t0_ns - tp.origin_ns) / 1e9;
    series = toLastEvent(tp, series);
    var xs = series.t.map(function (t) { return origin + t / 1e9; });
    var n = xs.length, cum = [], acc = new Array(n).fill(0);
    PARTS.forEach(function (p) {
      var col = series.part_bytes[p[0]];
      acc = acc.map(function (a, i) { return a + col[i]; });
      cum.push(acc);
    });
    var rest = series.total.map(function (t, i) { return Math.max(0, t - cum[cum.length - 1][i]); });
    var layers = [{ label: "the rest: activations, temporaries, cache", color: OTHER_COLOR, stroke: "#8a817c",
                    top: series.total, value: function (i) { return fmtBytes(rest[i]); } }];
    for (var k = PARTS.length - 1; k >= 0; k--) {
      (function (k) {
        layers.push({ label: PARTS[k][1], color: PARTS[k][2], top: cum[k],
                      value: function (i) { return fmtBytes(series.part_bytes[PARTS[k][0]][i]); } });
      })(k);
    }
    /* the point at the peak: what the chart draws there, for readers and tests */
    var atPeak = 0;
    var peakT = dev.peak_time_ns - tp.t0_ns;
    series.t.forEach(function (t, i) { if (t <= peakT) atPeak = i; });
    function hover(i, y) {
      var under = "the rest";
      for (var k = 0; k < PARTS.length; k++) if (y <= cum[k][i]) { under = PARTS[k][1]; break; }
      return fmtSecs(xs[i]) + ": " + fmtBytes(series.total[i]) + " live\n" + PARTS.map(function (p) {
        return p[1] + " " + fmtBytes(series.part_bytes[p[0]][i]);
      }).join(", ") + ", the rest " + fmtBytes(rest[i]) + "\nunder the cursor: " + under;
    }
    var peakX = (dev.peak_time_ns - tp.origin_ns) / 1e9;
    var box = memoryChart({ xs: xs, xLabel: "time", xValue: fmtSecs, layers: layers, yMax: dev.peak_bytes,
      rest: { index: atPeak, what: "at the peak" },
      peaks: [{ x: peakX, text: "peak " + fmtBytes(dev.peak_bytes), attrs: {} }],
      failures: [], phases: [], hover: hover,
      idle: "under the cursor: point at the chart for the time, the bytes live then and each part's share",
      note: "by part (segment level): the census nearest each point; the rest is every other byte live" });
    /* a part that falls to nothing and comes back is said, with why */
    PARTS.forEach(function (p) {
      var v = series.part_bytes[p[0]], held = 0, drop = -1, back = false;
      for (var i = 0; i < v.length; i++) {
        if (drop < 0 && v[i] > 0) held = v[i];
        else if (drop < 0 && held && !v[i]) drop = i;
        else if (drop >= 0 && v[i] > 0) back = true;
      }
      if (drop < 0) return;
      var why = p[0] === "gradients" ?
        ": the optimizer's zero_grad() frees them (set_to_none=True, PyTorch's default)" +
          (back ? " and the next backward allocates them again" : " and no later census found them") :
        ": the census nearest then found none";
      box.insertBefore(el("div", { cls: "note vt-parts-drop", "data-part": p[0], "data-x": String(xs[drop]),
        text: p[1] + " fall from " + fmtBytes(held) + " to 0 B at " + fmtSecs(xs[drop]) + why }), box.lastChild);
    });
    box.classList.add("vt-parts-chart");
    PARTS.forEach(function (p) { box.setAttribute("data-peak-" + p[0], String(series.part_bytes[p[0]][atPeak])); });
    return box;
  }

  /* ---- the timeline of a snapshot's device: allocated and reserved ---- */

  /* The process whose trace a snapshot belongs to: `vramtrace run` names
   * its snapshots after the trace ("TRACE.oom0.pickle"); a page of one
   * process and its snapshots pairs them too. Null when none, or when
   * the trace does not tie its clock to the wall clock. */
  function snapshotOwner(snap) {
    var tps = (timeline.processes || []).filter(function (t) { return t.origin_unix_ns; });
    var named = tps.filter(function (t) { return snap.file.indexOf(t.file + ".") === 0; })[0];
    var procs = report.processes || [];
    var tp = named || (procs.length === 1 && tps.length === 1 ? tps[0] : null);
    if (!tp) return null;
    var p = procs.filter(function (q) { return q.file === tp.file; })[0];
    return p ? { pid: p.pid, unixUs: Math.round(tp.origin_unix_ns / 1000) } : null;
  }

  function snapshotChart(d, sd, owner) {
    var timed = sd.axis === "time_us";
    var alloc = sd.allocated, res = sd.reserved;
    /* PyTorch's entry times are the wall clock's (microseconds since the
     * epoch): a snapshot of a traced process is drawn on its trace's axis,
     * seconds since the process started, so that one instant reads alike
     * on both; else seconds since the first entry, or entries applied */
    if (owner && Math.abs(sd.x0 - owner.unixUs) > 864e8) owner = null; /* clocks a day apart: unrelated */
    var x0Us = timed ? (owner ? owner.unixUs : sd.x0) : 0;
    function toX(v) { return timed ? (v + sd.x0 - x0Us) / 1e6 : v; }
    var xs = sd.x.map(toX);
    function at(index, timeUs) { return timed ? toX(timeUs - sd.x0) : index; }
    function xText(x) { return timed ? fmtSecs(x) : "entry " + x; }
    var allocColor = SITE_COLORS[0], resColor = "#a0cbe8";
    var layers = [
      { label: "reserved", color: resColor, stroke: "#6f9fc8", top: res, value: function (i) { return fmtBytes(res[i]); } },
      { label: "allocated", color: allocColor, top: alloc, value: function (i) { return fmtBytes(alloc[i]); } }];
    var pa = at(d.peak_allocated_index, d.peak_time_us), pr = at(d.peak_reserved_index, d.peak_reserved_time_us);
    var peaks = [
      { x: pa, color: "#000", text: "allocated peak " + fmtBytes(d.peak_allocated_bytes) + " at " + xText(pa),
        attrs: { "data-kind": "allocated", "data-bytes": String(d.peak_allocated_bytes) } },
      { x: pr, color: "#6f9fc8", text: "reserved peak " + fmtBytes(d.peak_reserved_bytes) + " at " + xText(pr),
        attrs: { "data-kind": "reserved", "data-bytes": String(d.peak_reserved_bytes) } }];
    var failures = (d.ooms || []).map(function (o, i) {
      var x = at(o.index + 1, o.time_us);
      return { x: x, attrs: { "data-verdict": o.verdict, "data-requested-bytes": String(o.requested_bytes) },
               tip: "out of memory #" + (i + 1) + " (trace entry " + o.index + ", " + xText(x) + "): " + o.verdict +
                    "\n" + snapOomText(o) };
    });
    function hover(i) {
      return xText(xs[i]) + ": allocated " + fmtBytes(alloc[i]) + ", reserved " + fmtBytes(res[i]) +
        " (" + fmtBytes(Math.max(0, res[i] - alloc[i])) + " cached, unallocated)";
    }
    var chart = memoryChart({ xs: xs, xLabel: timed ? "time" : "entry", xValue: xText, xEntries: !timed,
      layers: layers, yMax: Math.max(d.peak_allocated_bytes, d.peak_reserved_bytes), peaks: peaks,
      rest: { index: maxIndex(alloc), what: "at the allocated peak" },
      failures: failures, phases: [], hover: hover,
      idle: "under the cursor: point at the chart for the allocated and reserved bytes " +
        (timed ? "then" : "after that entry") + " and what the cache held unallocated",
      note: (!timed ? "x: trace entries applied (the snapshot has no times)" : owner ?
        "x: seconds since pid " + owner.pid + " started, as its trace's timeline" : "x: seconds since the snapshot's first entry") +
        "; each column of pixels keeps its maxima (exact) and its last values" });
    chart.setAttribute("data-x0-unix-us", String(x0Us));
    return chart;
  }

  /* ---- sections ---- */

  function processTitle(p) {
    return "pid " + p.pid + (p.rank !== null && p.rank !== undefined && p.rank >= 0 ? ", rank " + p.rank : "") +
      (p.hostname ? " on " + p.hostname : "") + ": " + (p.command || p.file);
  }

  function ledgerSection(proc, pi, dev, di) {
    var tp = (timeline.processes || []).filter(function (t) { return t.file === proc.file; })[0];
    var series = tp && tp.series.filter(function (s) { return s.device === dev.device && s.kind === dev.kind; })[0];
    var origin = tp ? tp.origin_ns : 0;
    var sec = el("section", { cls: "vt-ledger", id: "proc-" + pi + "-ledger-" + di });
    var failed = dev.failed_requests ? ", " + dev.failed_requests + " allocation request(s) failed" : "";
    sec.appendChild(el("h3", { text: ledgerTitle(dev) + ": peak " + fmtBytes(dev.peak_bytes) + " at " +
      fmtNs(dev.peak_time_ns - origin) + (dev.total_bytes ? " of " + fmtBytes(dev.total_bytes) : "") +
      ", " + dev.peak_count + " allocations live" + failed }));
    var chart = null, byPart = null, partsBox = null;
    if (series && series.t.length) {
      chart = timelineChart(proc, dev, tp, series);
      sec.appendChild(chart);
      if (series.part_bytes) {
        /* beside the timeline by site, in a box of its own (the ledger's
         * section keeps one plot: its selectors stay whole) */
        byPart = partsChart(proc, dev, tp, series);
        partsBox = el("section", { cls: "vt-ledger-parts", id: "proc-" + pi + "-ledger-" + di + "-parts" }, [
          el("h4", { text: ledgerTitle(dev) + " by part: parameters, buffers, gradients, optimizer state, the rest" }),
          byPart]);
      }
    }
    var views = [{ label: "at the peak (" + fmtBytes(dev.peak_bytes) + ")", title: "live at the peak",
                   sites: dev.peak_breakdown || [], total: dev.peak_bytes }];
    (dev.ooms || []).forEach(function (o, i) {
      views.push({ label: "at failure #" + (i + 1) + " (" + o.verdict + ", " + fmtBytes(o.requested_bytes) + " asked)",
                   title: "live at failure #" + (i + 1), sites: o.top_stacks || [], total: o.process_bytes });
    });
    (dev.phases || []).forEach(function (p) {
      views.push({ label: "at the peak of phase " + p.name + " (" + fmtBytes(p.peak_bytes) + ")",
                   title: "live at the peak of " + p.name, sites: p.peak_breakdown || [], total: p.peak_bytes });
    });
    /* the device's growth at PyTorch's allocator's level, also drawn on the timeline */
    var g = dev.growth;
    if (g) sec.appendChild(el("div", { cls: "vt-device-growth", "data-per-step-bytes": String(g.per_step_bytes),
      "data-from-step": String(g.from_step), "data-level": g.level,
      text: "growth (PyTorch's allocator, " + g.level + " bytes at each " + g.step_phase + " closing): " + growthSentence(g) +
        " (" + g.steps_grown + " in a row up to the last of " + g.steps + "; " + fmtBytes(g.first_bytes) + " -> " +
        fmtBytes(g.last_bytes) + ")" + (g.level === "allocated" ? ": a leak" : "") +
        (g.fills_device_at_step !== null ? "; at that rate the device fills at step " + g.fills_device_at_step : "") +
        (series && !series.growth_steps ? " (its steps' times were not kept: not drawn)" : "") }));
    /* what grows step over step (docs/user/REPORT.md, "Growth across openings") */
    (dev.phases || []).forEach(function (p) {
      var g = p.growth;
      if (!g) return;
      var top = (g.sites || [])[0];
      sec.appendChild(el("div", { cls: "vt-growth", "data-phase": p.name,
        "data-per-opening-bytes": String(g.per_opening_bytes), "data-from-opening": String(g.from_opening),
        text: "growth across openings: " + p.name + " +" + fmtBytes(g.per_opening_bytes) + " per opening from opening " +
          g.from_opening + " (" + g.openings + " in a row up to the last of " + p.closings + ")" +
          (top ? "; most at " + siteLabel(top) + " (+" + fmtBytes(top.bytes) + " per opening)" : "") }));
    });
    /* PyTorch's allocator's growth: one rate a step, its largest site
     * (the allocator's Python stacks under --torch-history: torch's own
     * frames left out, as the text does) */
    var ag = dev.growth;
    if (ag) {
      var atop = (ag.sites || [])[0], aname = "";
      if (atop && ag.sites_level === "tensors") {
        var fs = (atop.frames || []).filter(function (f) { return !/\/torch\//.test(f.file || ""); });
        aname = fs.length ? shortFrame(fs[0]) + (fs[0].file ? " (" + fs[0].file.split("/").pop() + ")" : "") : "";
      } else if (atop) {
        aname = siteLabel(atop);
      }
      sec.appendChild(el("div", { cls: "vt-allocator-growth", "data-level": ag.level,
        "data-per-step-bytes": String(ag.per_step_bytes), "data-from-step": String(ag.from_step),
        text: "growth (PyTorch's allocator, " + ag.level + " bytes at each " + ag.step_phase + " closing): +" +
          fmtBytes(ag.per_step_bytes) + " a step since step " + ag.from_step +
          (aname ? "; most at " + aname + " (+" + fmtBytes(atop.bytes) + " a step)" : "") }));
    }
    var live = liveSetView(views);
    sec.appendChild(live);
    return { sec: sec, chart: chart, byPart: byPart, partsBox: partsBox, live: live };
  }

  function jobOverview(procs) {
    var gpus = report.gpus || [];
    var sec = el("section", { cls: "vt-job", id: "job" });
    sec.appendChild(el("h2", { text: "Job: " + procs.length + " processes, " + gpus.length + " GPUs" }));
    /* which failure came first (times compare on one host) */
    var first = null;
    procs.forEach(function (p, pi) {
      (p.devices || []).forEach(function (d) {
        (d.ooms || []).forEach(function (o) {
          if (!first || o.time_ns < first.t) first = { t: o.time_ns, pi: pi, device: d.device };
        });
      });
    });
    var t = el("table", { cls: "vt-grid" });
    var head = el("tr", {}, [el("th", { text: "rank" }), el("th", { text: "pid" })]);
    gpus.forEach(function (g, gi) {
      head.appendChild(el("th", { text: "GPU " + gi + (g.name ? " " + g.name : ""), title: (g.uuid || "") + " on " + (g.hostname || "") }));
    });
    head.appendChild(el("th", { text: "host / pinned" }));
    t.appendChild(head);
    var sorted = procs.map(function (p, pi) { return { p: p, pi: pi }; }).sort(function (a, b) {
      var ra = a.p.rank === null || a.p.rank === undefined ? 1e9 : a.p.rank;
      var rb = b.p.rank === null || b.p.rank === undefined ? 1e9 : b.p.rank;
      return ra - rb || a.p.pid - b.p.pid;
    });
    sorted.forEach(function (e) {
      var p = e.p;
      var row = el("tr", {}, [el("td", { text: p.rank !== null && p.rank !== undefined && p.rank >= 0 ? String(p.rank) : "-" }),
        el("td", {}, [el("a", { href: "#proc-" + e.pi, text: String(p.pid) })])]);
      gpus.forEach(function (g) {
        var on = (g.processes || []).filter(function (q) { return q.pid === p.pid; })[0];
        var devs = (p.devices || []).filter(function (d) {
          return d.kind === "device" && on && d.uuid === g.uuid;
        });
        var td = el("td", { cls: "vt-cell" });
        devs.forEach(function (d) {
          var ooms = d.failed_requests || 0;
          var isFirst = first && first.pi === e.pi && first.device === d.device;
          td.appendChild(el("a", { href: "#proc-" + e.pi, cls: "vt-cell-link" + (ooms ? " vt-cell-oom" : "") + (isFirst ? " vt-cell-first" : ""),
            "data-peak-bytes": String(d.peak_bytes),
            text: fmtBytes(d.peak_bytes) + (ooms ? ", " + ooms + " OOM" : "") + (isFirst ? " (failed first)" : "") }));
        });
        row.appendChild(td);
      });
      var host = (p.devices || []).filter(function (d) { return d.kind !== "device"; })
        .map(function (d) { return ledgerTitle(d) + " " + fmtBytes(d.peak_bytes); }).join(", ");
      row.appendChild(el("td", { text: host }));
      t.appendChild(row);
    });
    var peaks = el("tr", {}, [el("th", { text: "GPU peak" }), el("th", { text: "" })]);
    gpus.forEach(function (g) { peaks.appendChild(el("td", { cls: "num", text: fmtBytes(g.peak_bytes) + (g.total_bytes ? " of " + fmtBytes(g.total_bytes) : "") })); });
    peaks.appendChild(el("td", {}));
    t.appendChild(peaks);
    sec.appendChild(t);
    return sec;
  }

  /* ---- the job: its overview and heatmap, from the job block (vt-job) ---- */

  /* Colour of a share of the largest value, 0..1: pale yellow to dark red. */
  var HEAT = [[255, 255, 204], [254, 217, 118], [253, 141, 60], [227, 26, 28], [128, 0, 38]];
  var HEAT_EMPTY = [232, 232, 232];
  function heatColor(share) {
    var x = Math.max(0, Math.min(1, share)) * (HEAT.length - 1), i = Math.min(HEAT.length - 2, Math.floor(x)), f = x - i;
    return [0, 1, 2].map(function (c) { return Math.round(HEAT[i][c] + (HEAT[i + 1][c] - HEAT[i][c]) * f); });
  }
  function rgb(c) { return "rgb(" + c[0] + "," + c[1] + "," + c[2] + ")"; }
  function who(r) { return (r.rank !== null && r.rank !== undefined ? "rank " + r.rank + ", " : "") + "pid " + r.pid; }
  function fmtSpan(ns) {
    var s = ns / 1e9;
    if (s < 1) return +(ns / 1e6).toFixed(3) + "ms";
    if (s < 120) return s.toFixed(s < 10 ? 1 : 0) + "s";
    if (s < 7200) return (s / 60).toFixed(1) + "m";
    return (s / 3600).toFixed(1) + "h";
  }
  /* A column's start as UTC text: columns count from the Unix epoch. */
  function columnTime(job, col) {
    var ms = (job.first_column + col * job.merge) * (job.resolution_ns / 1e6);
    return new Date(ms).toISOString().replace(".000Z", "Z");
  }

  function heatmap(job, failures) {
    var rows = job.rows, ncols = job.columns;
    var box = el("div", { cls: "vt-heat" });
    if (!job.timed || !ncols || !rows.length) {
      box.appendChild(el("div", { cls: "note", text: "no timeline: the traces or summaries have none" }));
      return box;
    }
    var largest = 0;
    rows.forEach(function (r) { r.bytes.forEach(function (b) { if (b > largest) largest = b; }); });
    var avail = Math.max(300, Math.min(1200, (app.clientWidth || 1200) - 140));
    var group = ncols > avail ? Math.ceil(ncols / avail) : 1;
    var dcols = Math.ceil(ncols / group);
    var cellW = group > 1 ? 1 : Math.max(1, Math.min(40, Math.floor(avail / ncols)));
    var rowH = Math.max(1, Math.min(14, Math.floor(560 / rows.length)));
    var W = dcols * cellW, H = rows.length * rowH;
    var canvas = el("canvas", { cls: "vt-heat-canvas", width: String(W), height: String(H),
      "data-rows": String(rows.length), "data-row-height": String(rowH), "data-cell-width": String(cellW),
      "data-group": String(group), "data-largest-bytes": String(largest),
      "data-ranks": rows.map(function (r) { return r.rank === null ? "-" : String(r.rank); }).join(",") });
    canvas.style.width = W + "px";
    canvas.style.height = H + "px";
    /* the largest value of row r in drawn column dc (null: no value) */
    function cell(r, dc) {
      var row = rows[r], v = null;
      for (var c = dc * group; c < Math.min(ncols, (dc + 1) * group); c++) {
        var k = c - row.first;
        if (k >= 0 && k < row.bytes.length && (v === null || row.bytes[k] > v)) v = row.bytes[k];
      }
      return v;
    }
    var ctx = canvas.getContext("2d");
    var img = ctx.createImageData(W, H), px = img.data;
    for (var r = 0; r < rows.length; r++) {
      for (var dc = 0; dc < dcols; dc++) {
        var v = cell(r, dc);
        var col = v === null ? HEAT_EMPTY : heatColor(largest ? v / largest : 0);
        for (var y = r * rowH; y < (r + 1) * rowH; y++)
          for (var x = dc * cellW; x < (dc + 1) * cellW; x++) {
            var o = 4 * (y * W + x);
            px[o] = col[0]; px[o + 1] = col[1]; px[o + 2] = col[2]; px[o + 3] = 255;
          }
      }
    }
    ctx.putImageData(img, 0, 0);

    /* rank labels on the left: every row when they fit, else every few */
    var labels = el("div", { cls: "vt-heat-labels" });
    labels.style.height = H + "px";
    var every = Math.max(1, Math.ceil(14 / rowH));
    rows.forEach(function (row, ri) {
      if (ri % every && ri !== rows.length - 1) return;
      if (ri === rows.length - 1 && ri % every && (ri % every) * rowH < 14) return;
      var l = el("div", { cls: "vt-heat-label", text: row.rank !== null ? "rank " + row.rank : "pid " + row.pid });
      l.style.top = (ri * rowH + rowH / 2 - 7) + "px";
      labels.appendChild(l);
    });
    var plot = el("div", { cls: "vt-heat-plot" }, [canvas]);
    plot.style.width = W + "px";
    plot.style.height = H + "px";
    /* the failures: the first and those that followed, on their rows */
    failures.forEach(function (m, i) {
      if (m.row === null) return;
      var dc = m.column === null ? 0 : Math.floor(m.column / group);
      var row = rows[m.row];
      var mk = el("div", { cls: "vt-heat-mark" + (i === 0 ? " vt-heat-first" : ""), "data-row": String(m.row),
        "data-rank": row.rank === null ? "" : String(row.rank), "data-pid": String(row.pid),
        "data-index": String(i), text: i === 0 ? "\u25c6" : "\u25c7" });
      mk.style.left = (dc * cellW + cellW / 2 - 6) + "px";
      mk.style.top = (m.row * rowH + rowH / 2 - 7) + "px";
      plot.appendChild(mk);
    });
    canvas.addEventListener("mousemove", function (e) {
      var rect = canvas.getBoundingClientRect();
      var ri = Math.floor((e.clientY - rect.top) / rowH), dc = Math.floor((e.clientX - rect.left) / cellW);
      if (ri < 0 || ri >= rows.length || dc < 0 || dc >= dcols) { hideTip(); return; }
      var row = rows[ri], v = cell(ri, dc), c0 = dc * group, c1 = Math.min(ncols, c0 + group);
      /* the failures marked in this cell (a mark is drawn in the column 0
       * of its row when its time is off the timeline) */
      var here = failures.filter(function (m) {
        return m.row === ri && Math.floor((m.column === null ? 0 : m.column) / group) === dc;
      }).map(function (m) { return "\n" + m.tip; }).join("");
      showTip(who(row) + (row.host ? " on " + row.host : "") + "\n" +
        columnTime(job, c0) + " to " + columnTime(job, c1) + " (+" + fmtSpan(c0 * job.merge * job.resolution_ns) + " into the job)\n" +
        (v === null ? "no trace then" : fmtBytes(v) + " (" + v + " bytes), " +
          (largest ? (100 * v / largest).toFixed(1) : "0") + "% of the largest") + here, e.clientX, e.clientY);
    });
    canvas.addEventListener("mouseleave", hideTip);
    var xaxis = el("div", { cls: "vt-heat-xaxis" });
    xaxis.style.width = Math.max(W, 360) + "px";
    xaxis.appendChild(el("span", { text: columnTime(job, 0) }));
    xaxis.appendChild(el("span", { text: "+" + fmtSpan(ncols * job.merge * job.resolution_ns) + " (" + ncols + " column" + (ncols > 1 ? "s" : "") + " of " + fmtSpan(job.merge * job.resolution_ns) + ")" }));
    box.appendChild(el("div", { cls: "vt-heat-row" }, [labels, el("div", {}, [plot, xaxis])]));
    /* the legend: bytes by colour */
    var legend = el("div", { cls: "vt-heat-legend" });
    var stops = HEAT.map(function (c, i) { return rgb(c) + " " + (100 * i / (HEAT.length - 1)) + "%"; }).join(", ");
    var bar = el("span", { cls: "vt-heat-bar" });
    bar.style.background = "linear-gradient(to right, " + stops + ")";
    var empty = el("span", { cls: "vt-heat-swatch" });
    empty.style.background = rgb(HEAT_EMPTY);
    legend.appendChild(el("span", { text: "0 B " }));
    legend.appendChild(bar);
    legend.appendChild(el("span", { cls: "vt-heat-max", "data-bytes": String(largest), text: " " + fmtBytes(largest) + " (the largest)" }));
    legend.appendChild(el("span", { text: "   " }));
    legend.appendChild(empty);
    legend.appendChild(el("span", { text: " not traced then" }));
    box.appendChild(legend);
    box.appendChild(el("div", { cls: "note", text: "one row per process with device memory, by rank; one column per " +
      fmtSpan(job.merge * job.resolution_ns) + (job.merge > 1 ? " (the largest of " + job.merge + " columns of " + fmtSpan(job.resolution_ns) + ")" : "") +
      (group > 1 ? " (each pixel the largest of " + group + " columns)" : "") +
      "; colour: the process's device bytes (all its devices), the largest in the column, as a share of the job's largest; " +
      "\u25c6 the first allocation failure, \u25c7 those that followed" }));
    box._canvas = canvas;
    return box;
  }

  var JOB_ROWS = 32; /* as the text's table; a button shows the rest */

  function jobTable(job, rows, procIndex) {
    var t = el("table", { cls: "vt-grid vt-job-table" });
    t.appendChild(el("tr", {}, ["rank", "local", "host", "device", "GPU", "peak", "capacity", "OOMs", "pid"].map(function (h) {
      return el("th", { text: h }); })));
    var lines = [];
    rows.forEach(function (r, ri) {
      r.devices.forEach(function (d) { lines.push({ r: r, ri: ri, d: d }); });
    });
    function add(from, to) {
      lines.slice(from, to).forEach(function (x) {
        var r = x.r, d = x.d, pi = procIndex(r);
        var first = job._first && job._first.row === x.ri && job._first.device === d.device;
        var peak = el(pi === null ? "span" : "a", { cls: "vt-cell-link" + (d.failed_requests ? " vt-cell-oom" : "") + (first ? " vt-cell-first" : ""),
          "data-peak-bytes": String(d.peak_bytes), text: fmtBytes(d.peak_bytes) + (first ? " (failed first)" : "") });
        if (pi !== null) peak.setAttribute("href", "#proc-" + pi);
        t.appendChild(el("tr", {}, [
          el("td", { cls: "num", text: r.rank !== null ? String(r.rank) : "-" }),
          el("td", { cls: "num", text: r.local_rank !== null ? String(r.local_rank) : "-" }),
          el("td", { text: r.host || "?" }),
          el("td", { cls: "num", text: String(d.device) }),
          el("td", { text: d.gpu, title: d.gpu_name || "" }),
          el("td", { cls: "num" }, [peak]),
          el("td", { cls: "num", text: d.capacity_bytes ? fmtBytes(d.capacity_bytes) : "-" }),
          el("td", { cls: "num" + (d.failed_requests ? " vt-cell-oom" : ""), text: String(d.failed_requests) }),
          el("td", { cls: "num", text: String(r.pid) })]));
      });
    }
    add(0, JOB_ROWS);
    var box = el("div", {}, [t]);
    if (lines.length > JOB_ROWS) {
      var more = el("button", { type: "button", cls: "vt-job-more", text: "show the other " + (lines.length - JOB_ROWS) + " (rank, GPU) rows" });
      more.addEventListener("click", function () { add(JOB_ROWS, lines.length); more.remove(); });
      box.appendChild(more);
    }
    return box;
  }

  function jobSection(job, doc, ji, njobs) {
    var rows = job.rows;
    var sec = el("div", { cls: "vt-job-one", id: "job-" + ji });
    var procs = report.processes || [];
    function procIndex(r) {
      for (var i = 0; i < procs.length; i++)
        if (procs[i].pid === r.pid && (procs[i].hostname || "") === (r.host || "")) return i;
      return null;
    }
    var title = "Job" + (njobs > 1 ? " " + (ji + 1) + " of " + njobs : "") + ": " + doc.processes + " process" + (doc.processes === 1 ? "" : "es") +
      (doc.ranks ? ", " + doc.ranks + " with a rank" : "") + (doc.world_size !== null ? " (world size " + doc.world_size + ")" : "") +
      ", on " + doc.gpus + " GPU" + (doc.gpus === 1 ? "" : "s") + " of " + doc.hosts + " host" + (doc.hosts === 1 ? "" : "s");
    sec.appendChild(el("h3", { text: title }));
    if (doc.session) sec.appendChild(el("div", { cls: "note", text: "session " + doc.session + (doc.session_host ? " on " + doc.session_host : "") + (doc.session_command ? ": " + doc.session_command : "") }));
    if (doc.world_size !== null && doc.ranks && doc.ranks < doc.world_size)
      sec.appendChild(el("div", { cls: "note", text: doc.ranks + " of " + doc.world_size + " ranks traced (the others wrote no trace here: no GPU use, another node, or the tracer did not reach them)" }));
    /* the failures: the first in time, then those that followed */
    var all = doc.first_failure ? [doc.first_failure].concat(doc.following_failures || []) : [];
    var marks = all.map(function (f, i) {
      var m = job.marks[i] || { row: null, column: null, since_start_ns: 0, device: f.device };
      var row = m.row !== null ? rows[m.row] : null;
      var gpu = row ? (row.devices.filter(function (d) { return d.device === f.device; })[0] || {}).gpu : null;
      var at = i === 0 ? "at " + fmtNs(m.since_start_ns) : fmtSecs((f.wall_ns - all[0].wall_ns) / 1e9) + " after the first";
      var text = (i === 0 ? "first failure: " : "then: ") + who(f) + ", " + at + ": " + (f.api || "allocation") + " of " +
        fmtBytes(f.requested_bytes) + " failed on device " + f.device + (gpu ? " (" + gpu + ")" : "") + ": " + f.verdict +
        (f.user_frame ? "\n  in " + f.user_frame : "");
      return { row: m.row, column: m.column, tip: text, device: f.device };
    });
    job._first = marks[0] || null;
    var facts = el("div", { cls: "vt-job-facts" });
    if (marks.length) {
      facts.appendChild(el("div", { cls: "vt-job-first", "data-rank": all[0].rank === null ? "" : String(all[0].rank), text: marks[0].tip }));
      /* what other ranks held on that GPU then (the text's lines under it) */
      (job.first_failure_on_gpu || []).forEach(function (line) {
        facts.appendChild(el("div", { cls: "vt-job-on-gpu", text: "  " + line }));
      });
      if (all.length > 1)
        facts.appendChild(el("div", { cls: "vt-job-followers", text: "followed by: " + all.slice(1).map(function (f) {
          return who(f) + " " + fmtSecs((f.wall_ns - all[0].wall_ns) / 1e9); }).join(", ") }));
    } else {
      facts.appendChild(el("div", { text: "no allocation failed" }));
    }
    function spread(p) {
      return "largest " + fmtBytes(p.largest_bytes) + " (" + who({ rank: p.largest_rank, pid: p.largest_pid }) + "), median " +
        fmtBytes(p.median_bytes) + ", smallest " + fmtBytes(p.smallest_bytes) + " (" + who({ rank: p.smallest_rank, pid: p.smallest_pid }) +
        "); spread " + (p.largest_bytes ? (100 * (p.largest_bytes - p.smallest_bytes) / p.largest_bytes).toFixed(1) : "0.0") + "% of the largest";
    }
    if (doc.device_peaks && doc.device_peaks.processes > 1)
      facts.appendChild(el("div", { cls: "vt-job-spread", "data-largest-bytes": String(doc.device_peaks.largest_bytes),
        text: "device peaks across " + doc.device_peaks.processes + " processes: " + spread(doc.device_peaks) }));
    var phs = (doc.phase_peaks || []).filter(function (p) { return p.processes > 1; });
    if (phs.length) {
      facts.appendChild(el("div", { text: "phase peaks across processes:" }));
      phs.forEach(function (p) { facts.appendChild(el("div", { cls: "vt-job-phase", text: "  " + p.name + " (" + p.processes + "): " + spread(p) })); });
    }
    (doc.growth || []).forEach(function (g) {
      facts.appendChild(el("div", { cls: "vt-job-growth", "data-pid": String(g.pid), "data-phase": g.phase,
        "data-per-opening-bytes": String(g.per_opening_bytes),
        text: "growing: " + who(g) + ": " + g.phase + " +" + fmtBytes(g.per_opening_bytes) + " per opening from opening " + g.from_opening }));
    });
    /* a rank's context or allocation on a GPU not its own (jobs[].foreign) */
    var foreign = doc.foreign || [];
    foreign.forEach(function (x) {
      var what = x.what === "context"
        ? " made a context on GPU " + x.gpu + ", not its own GPU " + x.own_gpu + ": " +
          (x.bytes !== null ? fmtBytes(x.bytes) : "cost not measured,") + " from " + fmtNs(x.begin_ns) + " to " +
          (x.end_ns === null ? "exit" : fmtNs(x.end_ns))
        : " allocated on GPU " + x.gpu + ", not its own GPU " + x.own_gpu + ": " + fmtBytes(x.bytes) + " at its peak there";
      facts.appendChild(el("div", { cls: "vt-job-foreign", "data-pid": String(x.pid), "data-what": x.what,
        "data-gpu": String(x.gpu), "data-bytes": x.bytes === null ? "" : String(x.bytes),
        text: (x.rank !== null ? "rank " + x.rank + " (pid " + x.pid + ")" : "pid " + x.pid) + what + (x.site ? ", at " + x.site : "") }));
    });
    if (foreign.length)
      facts.appendChild(el("div", { cls: "vt-job-foreign-next", text: "next step: " + foreign[0].next_step }));
    /* the ranks that depart from the median rank at a call site, as the text says them */
    var div = doc.divergence || [];
    if (div.length)
      facts.appendChild(el("div", { text: "diverging from the median rank at a call site (more than 10% above it, and at least 2% of the median device peak):" }));
    div.forEach(function (d) {
      var above = fmtBytes(d.bytes_above_median) + " above the median rank at its peak";
      facts.appendChild(el("div", { cls: "vt-job-divergence", "data-rank": String(d.rank), "data-site": d.site,
        "data-bytes-above-median": String(d.bytes_above_median), "data-bytes-per-step": String(d.bytes_per_step),
        text: "  rank " + d.rank + " (pid " + d.pid + ") diverges: " + (d.bytes_per_step ?
          "+" + fmtBytes(d.bytes_per_step) + " a step from step " + d.from_step + " at " + d.site + ", " + above :
          "+" + above + ", at " + d.site) }));
    });
    sec.appendChild(facts);
    sec.appendChild(heatmap(job, marks));
    sec.appendChild(jobTable(job, rows, procIndex));
    /* each GPU's combined peak (its processes together): traces only */
    var gpus = (report.gpus || []).filter(function (g) { return g.job === undefined || g.job === job.job; });
    if (gpus.length)
      sec.appendChild(el("div", { cls: "note vt-job-gpus", text: "GPU peaks, their processes together: " + gpus.map(function (g) {
        return (g.uuid ? "GPU-" + g.uuid.replace(/^GPU-/, "").slice(0, 8) : "?") + (g.hostname ? " on " + g.hostname : "") + " " +
          fmtBytes(g.peak_bytes) + (g.total_bytes ? " of " + fmtBytes(g.total_bytes) : ""); }).join(", ") }));
    if (job.idle_processes)
      sec.appendChild(el("div", { cls: "note", text: job.idle_processes + " process" + (job.idle_processes === 1 ? "" : "es") + " without device memory (launchers, agents): not drawn" }));
    return sec;
  }

  function jobSections(jobs) {
    var sec = el("section", { cls: "vt-job", id: "job" });
    sec.appendChild(el("h2", { text: "Job" + (jobs.length > 1 ? "s" : "") }));
    jobs.forEach(function (j, ji) { sec.appendChild(jobSection(j, (report.jobs || [])[j.job] || {}, ji, jobs.length)); });
    return sec;
  }

  /* ---- snapshots: the segment map ---- */

  function segmentMap(map, title) {
    var box = el("div", { cls: "vt-segments" });
    var segs = (map && map.segments) || [];
    box.appendChild(el("div", { cls: "vt-table-title", text: title + ": " + segs.length + " segments, " +
      fmtBytes(map.reserved_bytes) + " reserved, " + fmtBytes(map.allocated_bytes) + " allocated, " +
      fmtBytes(map.free_bytes) + " free in segments; largest free block " + fmtBytes(map.largest_free_block_bytes) }));
    if (!segs.length) return box;
    var largest = null;
    segs.forEach(function (s, si) {
      (s.blocks || []).forEach(function (b, bi) {
        if (b.state !== "allocated" && (!largest || b.size > largest.size)) largest = { size: b.size, si: si, bi: bi };
      });
    });
    var maxSize = Math.max.apply(null, segs.map(function (s) { return s.size; }));
    var shown = segs.slice(0, 400);
    var rowH = 16, labelW = 150, W = Math.max(400, Math.min(900, (app.clientWidth || 900) - 8));
    var NS = "http://www.w3.org/2000/svg";
    var svg = document.createElementNS(NS, "svg");
    svg.setAttribute("width", String(W));
    svg.setAttribute("height", String(shown.length * rowH + 4));
    svg.setAttribute("class", "vt-segmap");
    function rect(x, y, w, h, cls, tip) {
      var r = document.createElementNS(NS, "rect");
      r.setAttribute("x", x); r.setAttribute("y", y); r.setAttribute("width", Math.max(w, 0.5)); r.setAttribute("height", h);
      r.setAttribute("class", cls);
      var t = document.createElementNS(NS, "title"); t.textContent = tip; r.appendChild(t);
      return r;
    }
    shown.forEach(function (s, si) {
      var y = si * rowH + 2, scale = (W - labelW - 10) / maxSize;
      var label = document.createElementNS(NS, "text");
      label.setAttribute("x", "0"); label.setAttribute("y", String(y + rowH - 5));
      label.textContent = fmtBytes(s.size) + " " + (s.pool || "");
      svg.appendChild(label);
      svg.appendChild(rect(labelW, y, s.size * scale, rowH - 3, "seg", "segment 0x" + s.address.toString(16) + ": " + fmtBytes(s.size)));
      var x = labelW;
      (s.blocks || []).forEach(function (b, bi) {
        var w = b.size * scale;
        var isLargest = largest && largest.si === si && largest.bi === bi;
        var r = rect(x, y, w, rowH - 3, b.state === "allocated" ? "blk-alloc" : isLargest ? "blk-free blk-largest" : "blk-free",
          (b.state === "allocated" ? "allocated " + fmtBytes(b.size) + " (requested " + fmtBytes(b.requested_size) + ")" : "free " + fmtBytes(b.size)) +
          (isLargest ? ": the largest free block" : ""));
        if (isLargest) r.setAttribute("data-largest-free-bytes", String(b.size));
        svg.appendChild(r);
        x += w;
      });
    });
    box.appendChild(svg);
    if (segs.length > shown.length) box.appendChild(el("div", { cls: "note", text: (segs.length - shown.length) + " more segments not drawn" }));
    box.appendChild(el("div", { cls: "note", text: "each bar is a segment, to scale; blue: allocated blocks, white: free gaps, red outline: the largest free block" }));
    return box;
  }

  /* A snapshot's oom entry in words: its numbers as the text report says them. */
  function snapOomText(o) {
    var why = o.verdict === "fragmented" ?
        "free device memory plus free cached blocks cover the request, but no single piece of " + fmtBytes(o.requested_bytes) + " exists" :
      o.verdict === "exhausted" ?
        "even all free bytes together (" + fmtBytes(o.device_free_bytes + o.free_cached_bytes) + ") are less than the request; live tensors fill the GPU" :
      o.verdict === "limited" ?
        "the device had room for the segment; a memory fraction (torch.cuda.set_per_process_memory_fraction) or a limit refused it" : "";
    return "tried to allocate " + fmtBytes(o.requested_bytes) + " (a new segment of " + fmtBytes(o.segment_bytes) + ") on stream " + o.stream +
      "\ndevice free " + fmtBytes(o.device_free_bytes) + "; allocated " + fmtBytes(o.allocated_bytes) + ", reserved " + fmtBytes(o.reserved_bytes) +
      "\nfree inside partly used segments " + fmtBytes(o.free_cached_bytes) + ", largest free block " + fmtBytes(o.largest_free_block_bytes) +
      " (" + fmtBytes(o.largest_free_block_same_pool_bytes) + " in the same pool and stream)" + (why ? "\n-> " + why : "");
  }

  function snapshotSection(snap, si) {
    var sec = el("section", { cls: "vt-snapshot", id: "snapshot-" + si });
    sec.appendChild(el("h2", { text: "Snapshot " + snap.file }));
    var tsnap = (timeline.snapshots || []).filter(function (t) { return t.file === snap.file; })[0];
    var mounts = [], charts = [];
    (snap.devices || []).forEach(function (d, di) {
      var dsec = el("div", { cls: "vt-snap-device", id: "snapshot-" + si + "-device-" + di });
      sec.appendChild(dsec);
      dsec.appendChild(el("h3", { text: "device " + d.device + ": allocated peak " + fmtBytes(d.peak_allocated_bytes) +
        ", reserved peak " + fmtBytes(d.peak_reserved_bytes) + (d.ooms && d.ooms.length ? ", " + d.ooms.length + (d.ooms.length > 1 ? " out-of-memory entries" : " out-of-memory entry") : "") }));
      var sd = tsnap && (tsnap.devices || []).filter(function (x) { return x.device === d.device; })[0];
      if (sd && sd.x.length) {
        var chart = snapshotChart(d, sd, snapshotOwner(snap));
        dsec.appendChild(chart);
        charts.push(chart);
      }
      var which = el("select", { cls: "vt-seg-select" });
      var maps = [{ label: "segments at the allocated peak", map: d.segments_at_peak }, { label: "segments at the dump", map: d.segments_at_end }];
      (d.ooms || []).forEach(function (o, i) {
        if (o.segment_map) maps.push({ label: "segments at out of memory #" + (i + 1), map: o.segment_map });
      });
      maps = maps.filter(function (m) { return m.map; });
      maps.forEach(function (m, i) { which.appendChild(el("option", { value: String(i), text: m.label })); });
      var holder = el("div");
      function showMap(i) { holder.innerHTML = ""; holder.appendChild(segmentMap(maps[i].map, maps[i].label)); }
      which.addEventListener("change", function () { showMap(+which.value); });
      dsec.appendChild(el("div", { cls: "vt-controls" }, [which]));
      dsec.appendChild(holder);
      if (maps.length) showMap(0);
      (d.ooms || []).forEach(function (o, i) {
        dsec.appendChild(el("div", { cls: "vt-oom-text", "data-verdict": o.verdict || "",
          text: "out of memory #" + (i + 1) + " at trace entry " + o.index + ": " + (o.verdict || "") + ". " + snapOomText(o) }));
      });
      var views = [{ label: "at the allocated peak (" + fmtBytes(d.peak_allocated_bytes) + ")", title: "live at the allocated peak",
                     sites: d.peak_breakdown || [], total: d.peak_allocated_bytes }];
      (d.phases || []).forEach(function (p) {
        views.push({ label: "at the peak of " + p.name + " (" + fmtBytes(p.peak_bytes) + ")", title: "live at the peak of " + p.name,
                     sites: p.peak_breakdown || [], total: p.peak_bytes });
      });
      var live = liveSetView(views);
      dsec.appendChild(live);
      mounts.push(live);
    });
    return { sec: sec, lives: mounts, charts: charts };
  }

  /* ---- the page ---- */

  var DETAIL_REASONS = { failed: "an allocation failed", largest_peak: "the largest device peak of its job",
                         smallest_peak: "the smallest device peak of its job", first_ranks: "among the first ranks" };

  /* A job of more processes than detail.limit: which are detailed below,
   * and how to see another. */
  function detailNote(detail, inputs) {
    var others = detail.processes - detail.detailed;
    var traces = inputs.filter(function (i) { return i.kind === "trace"; }).map(function (i) { return i.path; });
    var cmd = "vramtrace report --html FILE --rank N " + (traces.length > 3 ? "TRACES" : traces.join(" "));
    return el("div", { cls: "note vt-detail-note", "data-detailed": String(detail.detailed), "data-not-detailed": String(others),
      text: detail.detailed + " of " + detail.processes + " processes are detailed below (a job of more than " + detail.limit +
        " processes): those whose allocations failed, the largest and the smallest device peak, the first ranks. The other " +
        others + " are in the job section only; to detail one: " + cmd + " (or --pid PID)." });
  }

  /* The inputs under the page's title: a few by name; more (every rank of
   * a job) as a count and the directory they share, the names folded into
   * a list that opens on a click (a thousand paths are a page of text). */
  var INPUTS_NAMED = 4;
  function commonDir(paths) {
    var parts = paths[0].split("/").slice(0, -1);
    paths.forEach(function (p) {
      var q = p.split("/");
      var n = 0;
      while (n < parts.length && n < q.length - 1 && parts[n] === q[n]) n++;
      parts = parts.slice(0, n);
    });
    return parts.join("/") || (paths[0].charAt(0) === "/" ? "/" : "");
  }
  function inputsText(inputs) {
    var paths = inputs.map(function (i) { return i.path; });
    if (paths.length <= INPUTS_NAMED) return "; inputs: " + paths.join(", ");
    var dir = commonDir(paths);
    return "; " + paths.length + " inputs" + (dir ? " in " + dir : "");
  }
  function inputsList(inputs) {
    if (inputs.length <= INPUTS_NAMED) return null;
    return el("details", { cls: "note vt-inputs" }, [el("summary", { text: "all " + inputs.length + " inputs" }),
      el("div", { text: inputs.map(function (i) { return i.path; }).join(", ") })]);
  }

  function main() {
    var t0 = performance.now();
    var procs = report.processes || [];
    var snaps = report.snapshots || [];
    var inputs = report.inputs || [];
    var summaries = inputs.filter(function (i) { return i.kind === "summary"; }).length;
    var jobs = jobPage.jobs || [];
    var detail = options.detail || null; /* a job of many processes: some detailed (report_html.h) */
    var header = el("header", {}, [el("h1", { text: "vramtrace report" }),
      el("div", { cls: "note", text: (summaries ? jobs.reduce(function (n, j) { return n + ((report.jobs || [])[j.job] || {}).processes; }, 0) +
        " process(es), from " + summaries + " summar" + (summaries === 1 ? "y" : "ies") :
        (detail ? detail.processes : procs.length) + " process(es), " + (report.gpus || []).length + " GPU(s), " + snaps.length + " snapshot(s)") +
        inputsText(inputs) }), inputsList(inputs)]);
    app.appendChild(header);
    if (procs.length === 1 && procs[0].command) document.title = "vramtrace: " + procs[0].command;
    var charts = [], lives = [];
    if (jobs.length) app.appendChild(jobSections(jobs));
    else if (procs.length > 1 || (report.gpus || []).length > 1) app.appendChild(jobOverview(procs));
    if (detail) app.appendChild(detailNote(detail, inputs));
    procs.forEach(function (p, pi) {
      var sec = el("section", { cls: "vt-process", id: "proc-" + pi });
      sec.appendChild(el("h2", { text: processTitle(p) }));
      var why = detail && (detail.why.filter(function (w) { return w.file === p.file; })[0] || {}).reasons;
      if (why && why.indexOf("all") < 0)
        sec.appendChild(el("div", { cls: "note vt-detail-why", "data-reasons": why.join(","),
          text: "detailed: " + why.map(function (r) { return DETAIL_REASONS[r] || r; }).join("; ") }));
      if (p.truncated) sec.appendChild(el("div", { cls: "note", text: p.truncation_note || "truncated" }));
      (p.devices || []).forEach(function (d, di) {
        var l = ledgerSection(p, pi, d, di);
        sec.appendChild(l.sec);
        if (l.partsBox) sec.appendChild(l.partsBox);
        if (l.chart) charts.push(l.chart);
        if (l.byPart) charts.push(l.byPart);
        lives.push(l.live);
      });
      app.appendChild(sec);
    });
    snaps.forEach(function (s, si) {
      var r = snapshotSection(s, si);
      app.appendChild(r.sec);
      lives = lives.concat(r.lives);
      charts = charts.concat(r.charts);
    });
    charts.forEach(function (c) { c._mount(); });
    lives.forEach(function (l) { if (l._show) l._show(0); });
    document.body.setAttribute("data-rendered-ms", String(Math.round(performance.now() - t0)));
    document.body.setAttribute("data-ready-at-ms", String(Math.round(performance.now())));
    document.body.setAttribute("data-ready", "1");
  }

  if (!window.uPlot || !flamegraphFactory || !window.d3) {
    app.textContent = "vramtrace: the chart libraries are missing from this page";
    throw new Error("vramtrace: chart libraries missing");
  }
  main();
})();
