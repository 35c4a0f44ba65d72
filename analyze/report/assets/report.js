/* rlbench HTML report (analyze.WriteHTML): draws the charts from the report
   embedded in #rlbench-data (ScenarioReport.series) with uPlot. When done it
   sets data-ready="1" on <body>, with data-charts (charts drawn),
   data-fault-labels (fault window labels placed), data-failures (charts that
   threw), data-render-ms (drawing) and data-ready-at-ms (since navigation). */
(function () {
  "use strict";
  var started = performance.now();
  var report = JSON.parse(document.getElementById("rlbench-data").textContent);
  var SERIES_COLORS = { admitted: "#15803d", rejected: "#d97706", errors: "#b91c1c", receipts: "#2563eb" };
  var CLASS_COLORS = {
    admitted: "#15803d", local_429: "#d97706", global_429: "#7c3aed", rls_error: "#dc2626",
    other_4xx: "#92400e", other_5xx: "#7f1d1d", other: "#6b7280", no_response: "#111827"
  };
  var BOUND_COLORS = ["#111827", "#be185d", "#0e7490", "#4d7c0f"];
  var charts = 0, faultLabels = 0, failures = 0;

  function classColor(c) { return CLASS_COLORS[c] || "#0891b2"; }
  function alpha(hex, a) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + a + ")";
  }
  // fmtMs formats a duration in ms with 3 significant digits.
  function fmtMs(ms) {
    if (ms == null || isNaN(ms)) return "-";
    var ns = ms * 1e6, a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + "ns";
    if (a < 1e6) return +(ns / 1e3).toPrecision(3) + "µs";
    if (a < 1e9) return +(ns / 1e6).toPrecision(3) + "ms";
    return +(ns / 1e9).toPrecision(3) + "s";
  }
  function chartWidth(host, count) {
    var k = Math.min(count, 2), w = host.clientWidth || 1200;
    return Math.max(360, Math.floor((w - 14 * (k - 1)) / k));
  }
  function box(host, cls) {
    var d = document.createElement("div");
    d.className = "chart " + cls;
    host.appendChild(d);
    return d;
  }

  // faultWindows shades each fault window of scenario s and labels it in
  // the overlay; labels follow zoom (draw hook). A JSON number above 2^53
  // loses digits in JavaScript: the labels take the exact begin and end from
  // the section's fault window rows (rendered by Go).
  function faultWindows(s, startNs) {
    var rows = document.querySelectorAll('section.scenario[data-index="' + s._index + '"] tr.fault-window');
    var spans = (s.fault_windows || []).map(function (w, i) {
      var row = rows[i];
      return { x0: (w.begin_ns - startNs) / 1e6, x1: (w.end_ns - startNs) / 1e6, w: w,
        beginNs: row ? row.dataset.beginNs : String(w.begin_ns), endNs: row ? row.dataset.endNs : String(w.end_ns) };
    });
    var els = [];
    return {
      hooks: {
        drawClear: [function (u) {
          var ctx = u.ctx;
          ctx.save();
          ctx.fillStyle = "rgba(220,38,38,0.13)";
          spans.forEach(function (s) {
            var a = u.valToPos(s.x0, "x", true), b = u.valToPos(s.x1, "x", true);
            var lo = Math.max(a, u.bbox.left), hi = Math.min(b, u.bbox.left + u.bbox.width);
            if (hi >= lo) ctx.fillRect(lo, u.bbox.top, Math.max(hi - lo, 2), u.bbox.height);
          });
          ctx.restore();
        }],
        draw: [function (u) {
          spans.forEach(function (s, i) {
            var el = els[i];
            if (!el) {
              el = els[i] = document.createElement("div");
              el.className = "fw-label";
              el.dataset.name = s.w.name;
              el.dataset.target = s.w.target;
              el.dataset.beginNs = s.beginNs;
              el.dataset.endNs = s.endNs;
              el.textContent = s.w.name + " (" + s.w.target + ")" + (s.w.open ? ", open" : "");
              u.over.appendChild(el);
              faultLabels++;
            }
            var x = u.valToPos(s.x0, "x");
            el.style.left = Math.max(0, x) + "px";
            el.style.top = (2 + 16 * (i % 3)) + "px";
            el.style.display = x > u.over.clientWidth ? "none" : "";
          });
        }]
      }
    };
  }

  function xAxis() {
    return { values: function (u, vals) { return vals.map(fmtMs); }, label: "since the first event" };
  }
  function xSeries() {
    return { label: "at", value: function (u, v) { return fmtMs(v); } };
  }

  function timelines(host, s, ser) {
    var bin = ser.bin_ns / 1e6, n = ser.bins, xs = [], ends = [];
    for (var k = 0; k <= n; k++) xs.push(k * bin);
    for (k = 0; k < n; k++) ends.push((k + 1) * bin);
    var step = uPlot.paths.stepped({ align: 1 });
    var w = chartWidth(host, ser.targets.length);
    ser.targets.forEach(function (t) {
      var ext = function (a) { return a.concat([0]); };
      var line = function (label, key) {
        return { label: label, stroke: SERIES_COLORS[key], fill: alpha(SERIES_COLORS[key], key === "receipts" ? 0 : 0.15),
          width: key === "receipts" ? 2 : 1.5, dash: key === "receipts" ? [5, 3] : undefined, paths: step, points: { show: false } };
      };
      var el = box(host, "timeline-target");
      el.dataset.target = t.target;
      new uPlot({
        title: t.target + ": requests and receipts per " + fmtMs(bin) + " bin", width: w, height: 230,
        scales: { x: { time: false } },
        series: [xSeries(), line("admitted", "admitted"), line("limiter-rejected", "rejected"), line("errors", "errors"), line("backend receipts", "receipts")],
        axes: [xAxis(), { label: "per bin" }],
        plugins: [faultWindows(s, ser.start_ns)]
      }, [xs, ext(t.admitted), ext(t.rejected), ext(t.errors), ext(t.receipts)], el);
      charts++;
    });

    // Cumulative admissions, receipts and bound lines, all targets.
    var receipts = [], sum = 0;
    ser.receipts.forEach(function (v) { sum += v; receipts.push(sum); });
    var series = [xSeries(),
      { label: "admitted (cumulative)", stroke: SERIES_COLORS.admitted, width: 2, points: { show: false } },
      { label: "backend receipts (cumulative)", stroke: SERIES_COLORS.receipts, width: 2, dash: [5, 3], points: { show: false } }];
    var data = [ends, ser.admitted_cumulative, receipts];
    (ser.bounds || []).forEach(function (b, i) {
      series.push({ label: b.name, stroke: BOUND_COLORS[i % BOUND_COLORS.length], width: 1.5, dash: [2, 2], points: { show: false } });
      data.push(b.allowed);
    });
    var el = box(host, "timeline-cumulative");
    new uPlot({
      title: "All targets: admissions" + ((ser.bounds || []).length ? " against the bound" : "") + ", cumulative",
      width: chartWidth(host, 1), height: 230, scales: { x: { time: false } },
      series: series, axes: [xAxis(), { label: "requests" }],
      plugins: [faultWindows(s, ser.start_ns)]
    }, data, el);
    charts++;
  }

  // percentX maps a percent to the HdrHistogram percentile axis: -log10(1 - p/100).
  function percentX(p, last) { return p >= 100 ? last : -Math.log10(1 - p / 100); }

  function latencies(host, s, ser) {
    var targets = ser.targets.map(function (t) { return t.target; });
    var w = chartWidth(host, 2);
    targets.forEach(function (target) {
      // Latency over time: one point series per class on a merged x axis.
      var lines = (ser.latency || []).filter(function (l) { return l.target === target; });
      if (lines.length) {
        var xsSet = {};
        lines.forEach(function (l) { l.offset_ns.forEach(function (x) { xsSet[x] = true; }); });
        var xs = Object.keys(xsSet).map(Number).sort(function (a, b) { return a - b; });
        var pos = {};
        xs.forEach(function (x, i) { pos[x] = i; });
        var data = [xs.map(function (x) { return x / 1e6; })];
        var series = [xSeries()];
        lines.forEach(function (l) {
          var ys = new Array(xs.length).fill(null);
          l.offset_ns.forEach(function (x, i) { ys[pos[x]] = l.latency_ns[i] / 1e6; });
          data.push(ys);
          series.push({ label: l.class + " (" + l.count + ")", stroke: classColor(l.class), fill: classColor(l.class),
            paths: function () { return null; }, points: { show: true, size: 5, stroke: classColor(l.class), fill: classColor(l.class) },
            value: function (u, v) { return fmtMs(v); } });
        });
        var el = box(host, "latency-time");
        el.dataset.target = target;
        new uPlot({
          title: target + ": latency of each request by send time", width: w, height: 230, scales: { x: { time: false } },
          series: series, axes: [xAxis(), { label: "latency", values: function (u, vals) { return vals.map(fmtMs); } }],
          plugins: [faultWindows(s, ser.start_ns)]
        }, data, el);
        charts++;
      }
      // Latency distribution: percentile curves per class.
      var dists = (ser.distributions || []).filter(function (d) { return d.target === target; });
      if (dists.length) {
        var ps = dists[0].percents, finite = ps.filter(function (p) { return p < 100; });
        var last = -Math.log10(1 - finite[finite.length - 1] / 100) + 0.5;
        var dx = ps.map(function (p) { return percentX(p, last); });
        var ddata = [dx], dseries = [{ label: "percentile", value: function (u, v) { return v == null ? "-" : (v >= last ? "100" : +(100 - 100 * Math.pow(10, -v)).toPrecision(6)) + "%"; } }];
        dists.forEach(function (d) {
          ddata.push(d.latency_ns.map(function (v) { return v / 1e6; }));
          dseries.push({ label: d.class + " (" + d.count + ")", stroke: classColor(d.class), width: 2, points: { show: false },
            value: function (u, v) { return fmtMs(v); } });
        });
        var del = box(host, "latency-distribution");
        del.dataset.target = target;
        new uPlot({
          title: target + ": latency distribution by class", width: w, height: 230, scales: { x: { time: false } },
          series: dseries,
          axes: [{ label: "percentile", splits: function () { return [0, 1, 2, 3, 4, 5]; },
            values: function (u, vals) { return vals.map(function (v) { return ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"][v] || ""; }); } },
          { label: "latency", values: function (u, vals) { return vals.map(fmtMs); } }]
        }, ddata, del);
        charts++;
      }
    });
  }

  (report.scenarios || []).forEach(function (s, i) {
    var ser = s.series;
    s._index = i;
    if (!ser) return;
    var t = document.querySelector('.charts.timeline[data-index="' + i + '"]');
    var l = document.querySelector('.charts.latency[data-index="' + i + '"]');
    try {
      if (t) timelines(t, s, ser);
      if (l) latencies(l, s, ser);
    } catch (e) {
      failures++;
      console.error("rlbench report: charts of scenario " + s.name + ": " + e);
    }
  });
  // uPlot commits its first draw in a microtask: finish after it.
  setTimeout(function () {
    document.body.dataset.charts = String(charts);
    document.body.dataset.faultLabels = String(faultLabels);
    document.body.dataset.failures = String(failures);
    document.body.dataset.renderMs = String(Math.round(performance.now() - started));
    // Milliseconds from the start of navigation to the page drawn in full.
    document.body.dataset.readyAtMs = String(Math.round(performance.now()));
    document.body.dataset.ready = "1";
  }, 0);
})();
