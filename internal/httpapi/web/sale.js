// The live sale page: polls the SKU's snapshot once a second and writes
// it into the page. Text only (textContent), never HTML, so nothing the
// server sends can run here.
"use strict";

(function () {
  const sku = document.body.dataset.sku;
  const url = "/api/v1/skus/" + encodeURIComponent(sku) + "/live";
  const period = 1000;
  const rpsHistory = new Array(60).fill(0); // last 60 samples of requests/s, oldest first

  const $ = (id) => document.getElementById(id);
  const fmtInt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
  const fmtMs = (v) => {
    if (v === null || v === undefined) return "–";
    if (v >= 1000) return (v / 1000).toFixed(2) + " s";
    return (v >= 10 ? v.toFixed(0) : v.toFixed(1)) + " ms";
  };
  const fmtMoney = (minor) => (minor / 100).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });

  function set(id, text) {
    const el = $(id);
    if (el.textContent !== text) el.textContent = text;
  }

  function row(cells, cls) {
    const tr = document.createElement("tr");
    if (cls) tr.className = cls;
    for (const c of cells) {
      const td = document.createElement("td");
      td.textContent = c;
      tr.appendChild(td);
    }
    return tr;
  }

  function render(s) {
    set("total", fmtInt(s.total));
    set("available", fmtInt(s.db_available));
    set("frozen", fmtInt(s.frozen));
    set("sold", fmtInt(s.sold));
    const parts = { sold: s.sold, frozen: s.frozen, available: s.db_available };
    for (const [k, v] of Object.entries(parts)) {
      $("bar-" + k).style.width = (s.total > 0 ? (100 * v) / s.total : 0) + "%";
    }

    const state = $("state");
    let label = "ON SALE", cls = "on-sale";
    if (s.redis_down) { label = "DEGRADED (Redis down)"; cls = "degraded"; }
    if (s.sold_out) { label = "SOLD OUT"; cls = "sold-out"; }
    set("state", label);
    state.className = "state " + cls;
    state.dataset.soldOut = String(s.sold_out);

    set("redis-available", fmtInt(s.redis_available));
    set("drift", fmtInt(s.drift));
    const buckets = $("buckets");
    const per = s.bucket_stock || [];
    // Scaled to an even share of the total, so a bucket's bar reads as
    // how full it is; a bucket holding more (after a restock) sets the top.
    const top = Math.max(1, ...per, per.length ? Math.ceil(s.total / per.length) : 0);
    while (buckets.children.length > per.length) buckets.lastChild.remove();
    per.forEach((v, i) => {
      let b = buckets.children[i];
      if (!b) {
        b = document.createElement("div");
        b.className = "bucket";
        const fill = document.createElement("div");
        fill.className = "fill";
        const n = document.createElement("span");
        b.append(fill, n);
        buckets.appendChild(b);
      }
      b.title = "bucket " + i + ": " + v;
      b.firstChild.style.height = (100 * v) / top + "%";
      b.lastChild.textContent = String(v);
      b.classList.toggle("empty", v === 0);
    });

    const t = s.traffic || {};
    set("rps", t.requests_per_second === null || t.requests_per_second === undefined ? "–" : t.requests_per_second.toFixed(1));
    set("p99", fmtMs(t.p99_ms));
    set("p99-admitted", fmtMs(t.p99_admitted_ms));
    set("p99-shed", fmtMs(t.p99_shed_ms));
    rpsHistory.push(t.requests_per_second || 0);
    rpsHistory.shift();
    const peak = Math.max(1, ...rpsHistory);
    $("spark-line").setAttribute("points", rpsHistory.map((v, i) => (i * 300) / 59 + "," + (58 - (56 * v) / peak)).join(" "));

    const answers = $("answers");
    answers.replaceChildren();
    const codes = Object.keys(t.answers || {}).sort();
    if (codes.length === 0) answers.appendChild(row(["no buy requests yet", ""]));
    for (const code of codes) answers.appendChild(row([code + " " + codeName(code), fmtInt(t.answers[code])], "code-" + code[0] + "xx"));

    for (const st of ["PENDING_PAYMENT", "PAID", "EXPIRED", "CANCELLED"]) set("orders-" + st, fmtInt((s.orders || {})[st]));
    set("waitlist", fmtInt(s.waitlist));

    // A fair sale's queue: its length and the serving counter (the highest
    // rank given a pass); hidden for a SKU sold without a queue.
    const q = s.queue;
    $("queue-panel").hidden = !q;
    if (q) {
      set("queue-state", q.state);
      set("queue-length", fmtInt(q.queued));
      set("queue-serving", fmtInt(q.serving));
      set("queue-outstanding", fmtInt(q.outstanding));
      set("queue-spent", fmtInt(q.spent));
    }

    const recent = $("recent");
    recent.replaceChildren();
    for (const o of s.recent_orders || []) {
      recent.appendChild(row([new Date(o.updated_at).toLocaleTimeString("en-GB"), o.status, String(o.quantity), fmtMoney(o.amount)], "st-" + o.status));
    }
    if (!s.recent_orders || s.recent_orders.length === 0) recent.appendChild(row(["no orders yet", "", "", ""]));

    set("updated", "updated " + new Date(s.at).toLocaleTimeString("en-GB"));
    document.body.dataset.at = s.at;
  }

  function codeName(code) {
    return { "201": "reserved", "400": "invalid", "401": "unauthenticated", "404": "unknown", "409": "sold out / conflict",
      "422": "limit", "429": "busy / rate limited", "499": "client gone", "500": "internal", "503": "unavailable" }[code] || "";
  }

  async function tick() {
    try {
      const resp = await fetch(url, { cache: "no-store", headers: { Accept: "application/json" } });
      const body = await resp.json();
      if (!resp.ok) throw new Error(body.code + ": " + body.message);
      render(body);
      document.body.classList.remove("stale");
    } catch (e) {
      document.body.classList.add("stale");
      set("updated", "not updating (" + e.message + "), retrying…");
    } finally {
      setTimeout(tick, period);
    }
  }
  tick();
})();
