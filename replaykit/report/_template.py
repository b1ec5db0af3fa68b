"""The HTML of a report: Jinja2 templates (autoescape on), styles, plotly.js inlined once, and
the page's own script (figures, change stepping, the base/replay scrubber).

Escaping lives in one place: every value a template prints is escaped by Jinja2 unless it is
:class:`markupsafe.Markup` built here (a rendered template or a pandas Styler table, which
escapes its cells itself). Data for scripts goes through :func:`._embed.script_json`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from jinja2 import DictLoader, Environment, select_autoescape
from markupsafe import Markup

from ._embed import script_json

__all__ = ["TRANSCRIPT_CSS", "Markup", "page", "render"]

# No URL the page loads: default-src 'none' blocks every fetch, image, font and frame; only
# the inline scripts and styles of the page itself run.
_CSP = ("default-src 'none'; script-src 'unsafe-inline'; "
        "style-src 'unsafe-inline'; img-src data: blob:; font-src data:; connect-src 'none'; "
        "base-uri 'none'; form-action 'none'")

#: styles of the transcript and the run tree (shared with ``rk.widgets.Transcript``).
TRANSCRIPT_CSS = """
.rk-transcript .msg{border-left:3px solid #90a4ae;margin:6px 0;padding:2px 8px}
.rk-transcript .msg.user_message{border-color:#1565c0}
.rk-transcript .msg.model_response{border-color:#2e7d32}
.rk-transcript .msg.tool_call{border-color:#ef6c00}
.rk-transcript .msg.tool_result{border-color:#6d4c41}
.rk-transcript .who{font-size:11px;color:#555;text-transform:uppercase;letter-spacing:.04em}
.rk-transcript .origin,.rk-legend .origin{font-size:11px;color:#fff;background:#607d8b;
 border-radius:6px;padding:0 5px;margin-left:6px;text-transform:none;letter-spacing:0}
.origin.recorded{background:#78909c}.origin.patched{background:#ef6c00}
.origin.fixture{background:#c62828}.origin.policy-copy{background:#fff;color:#8d6e00;
 border:1px dashed #8d6e00}.origin.live{background:#2e7d32}.origin.blocked{background:#000}
.origin.synthetic{background:#7b1fa2}
.rk-transcript .flag,.rk-legend .flag{font-size:11px;color:#b71c1c;background:#ffebee;
 border:1px solid #b71c1c;border-radius:6px;padding:0 5px;margin-left:6px;
 text-transform:none;letter-spacing:0}
.rk-transcript .msg.unsupported{background:#fff8f8}
.rk-transcript .why{font-size:12px;color:#b71c1c;margin:2px 0}
.rk-legend{font-size:12px;color:#37474f;margin:4px 0 8px}.rk-legend dt{display:inline}
.rk-legend dd{display:inline;margin:0 12px 0 4px}
.rk-transcript .body{white-space:pre-wrap;word-break:break-word}
details>summary{cursor:pointer;color:#37474f;font-size:12px}
.rk-tree ul{list-style:none;padding-left:18px;margin:0}
.rk-tree li{margin:1px 0;font-size:12px}
.rk-tree .row{display:grid;grid-template-columns:minmax(260px,1fr) 80px 2fr;gap:8px;
 align-items:center}
.rk-tree .bar{position:relative;height:10px;background:#f1f1f1}
.rk-tree .bar span{position:absolute;top:0;height:10px;background:#4e79a7;min-width:2px}
.rk-tree .bar span.tool{background:#f28e2b}.rk-tree .bar span.turn{background:#9ecae1}
.rk-tree .dur{font-variant-numeric:tabular-nums;text-align:right;color:#555}
details>summary{cursor:pointer;color:#37474f;font-size:12px}
"""

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;
 background:#fafafa;line-height:1.45}
header{background:#263238;color:#fff;padding:16px 28px}
header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#cfd8dc;font-size:13px}
nav{padding:8px 28px;background:#eceff1;font-size:13px}
nav a{margin-right:12px;color:#37474f}
main{padding:0 28px 40px;max-width:1300px}
section{background:#fff;border:1px solid #e0e0e0;border-radius:6px;margin:18px 0;
 padding:6px 18px 14px}
h2{font-size:18px;border-bottom:1px solid #eee;padding-bottom:4px}
.tablewrap{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:12px;margin:6px 0}
th,td{border:1px solid #e0e0e0;padding:3px 6px;text-align:left;vertical-align:top}
td{overflow-wrap:break-word;word-break:normal;max-width:520px}
del{background:#ffcdd2;text-decoration:line-through}
ins{background:#c8e6c9;text-decoration:none}
th{background:#f5f5f5;white-space:nowrap;word-break:keep-all}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.kv th{width:230px}
pre{background:#f6f8fa;padding:8px;font-size:11.5px;overflow:auto;max-height:420px;
 white-space:pre-wrap;word-break:break-word;margin:0}
.badge{display:inline-block;padding:2px 10px;border-radius:10px;color:#fff;background:#616161;
 font-weight:600}
.badge.exact,.badge.verified,.badge.completed{background:#2e7d32}
.badge.aligned{background:#558b2f}
.badge.diverged_but_comparable,.badge.paused{background:#ef6c00}
.badge.non_comparable,.badge.broken,.badge.failed{background:#c62828}
.warn{background:#fff3e0;border-left:4px solid #ef6c00;padding:6px 10px}
.claim{background:#e3f2fd;border-left:4px solid #1565c0;padding:6px 10px}
.note{color:#666;font-size:12px}
.figure{width:100%;min-height:320px}
#findings{border:2px solid #1565c0}
#findings h3{margin:10px 0 2px;font-size:14px;color:#37474f}
#findings ul{margin:2px 0 6px;padding-left:22px}
#findings li{margin:2px 0}
#findings li a.ev{font-size:12px;margin-left:6px;color:#1565c0;white-space:nowrap}
#findings li.caveat{color:#8d3b00}
#findings .answer{font-size:16px;font-weight:600;margin:4px 0 8px;padding:6px 10px;
 border-left:5px solid #546e7a;background:#eceff1}
#findings .answer.changed{border-color:#c62828}#findings .answer.unchanged{border-color:#2e7d32}
#findings .answer.undetermined{border-color:#ef6c00}
#findings li.unsupported{color:#b71c1c}
.headline{font-size:16px;font-weight:600;margin:8px 0}
.fixture-spec pre{max-height:260px}
td.hit{background:#fff8e1}
td.hit.col0{border-left:4px solid #ef6c00}
td.envelope{color:#78909c}
tr.current td{outline:2px solid #1565c0;outline-offset:-2px}
.op-changed{background:#fff3e0}.op-added{background:#e8f5e9}.op-removed{background:#ffebee}
span.before{color:#b71c1c;text-decoration:line-through}
span.after{color:#1b5e20;font-weight:600}
code.path{font-weight:600;color:#0d47a1}
.changes-nav{display:flex;gap:8px;align-items:center;margin:6px 0}
.scrubber .controls{display:flex;flex-wrap:wrap;align-items:center;gap:8px;margin:8px 0}
.scrubber input[type=range]{flex:1}
.scrubber .panes{display:grid;grid-template-columns:1fr 1fr;gap:10px}
.scrubber h4{margin:4px 0}
.scrubber .state div{font-family:monospace;font-size:11.5px;white-space:pre-wrap;
 word-break:break-word;padding:0 4px}
.scrubber .state div.differs{background:#fff3e0;border-left:3px solid #ef6c00}
#rk-scrub-label{font-family:monospace;font-size:12px;flex:1 1 100%;min-width:0;
 white-space:normal;overflow-wrap:anywhere}
""" + TRANSCRIPT_CSS

# Everything the scripts read comes from <script type="application/json"> elements and is
# written with textContent / createElement: no data ever reaches innerHTML.
_JS = r"""
(function(){
  "use strict";
  function json(el){ return JSON.parse(el.textContent); }
  function $(id){ return document.getElementById(id); }
  // figures
  var figs = document.querySelectorAll("script.rk-figure");
  for (var k = 0; k < figs.length; k++) {
    var spec = json(figs[k]);
    var target = $(figs[k].getAttribute("data-target"));
    if (target && window.Plotly) {
      window.Plotly.newPlot(target, spec.data || [], spec.layout || {},
        {responsive: true, displaylogo: false, showLink: false, showSendToCloud: false,
         showEditInChartStudio: false, typesetMath: false,
         modeBarButtonsToRemove: ["sendDataToCloud"]});
    }
  }
  // stepping from change to change (changed-values table)
  var rows = document.querySelectorAll("#rk-changes tbody tr");
  var cur = -1;
  function goChange(i){
    if (!rows.length) { return; }
    i = (i + rows.length) % rows.length;
    if (cur >= 0) { rows[cur].classList.remove("current"); }
    cur = i; rows[i].classList.add("current");
    rows[i].scrollIntoView({block: "nearest"});
    var lab = $("rk-change-label");
    if (lab) { lab.textContent = "change " + (i + 1) + " of " + rows.length; }
  }
  if ($("rk-change-next")) {
    $("rk-change-next").addEventListener("click", function(){ goChange(cur + 1); });
    $("rk-change-prev").addEventListener("click", function(){ goChange(cur - 1); });
    document.addEventListener("keydown", function(e){
      var t = e.target && e.target.tagName;
      if (t === "INPUT" || t === "TEXTAREA" || t === "SELECT") { return; }
      if (e.key === "n" || e.key === "j") { goChange(cur + 1); }
      if (e.key === "p" || e.key === "k") { goChange(cur - 1); }
    });
    window.rkGoChange = goChange;
  }
  // scrubber: base and replay at the same step
  var dataEl = $("rk-scrub-data");
  if (!dataEl) { return; }
  var all = json(dataEl);
  var sides = {replay: all.replay, base: all.base};
  var slider = $("rk-scrub");
  var n = Math.max(all.replay.seq.length, all.base ? all.base.seq.length : 0);
  // a long run embeds a window of steps: index i is step off + i of the run
  var off = all.replay.offset || 0;
  var total = Math.max(all.replay.total || n, all.base ? (all.base.total || 0) : 0);
  function clone(o){ return JSON.parse(JSON.stringify(o)); }
  function makeCache(){ return {i: -1, state: null}; }
  var caches = {replay: makeCache(), base: makeCache()};
  function stateAt(name, i){
    var d = sides[name], c = caches[name], s, from;
    i = Math.min(i, d.seq.length - 1);
    if (c.i >= 0 && c.i <= i) { s = c.state; from = c.i + 1; }
    else { s = clone(d.zero); from = 0; }
    for (var j = from; j <= i; j++) {
      var delta = d.delta[j];
      if (delta === null) { delta = all.replay.delta[j]; }  // same as the replay here
      for (var key in delta) {
        if (Object.prototype.hasOwnProperty.call(delta, key)) { s[key] = delta[key]; }
      }
    }
    caches[name] = {i: i, state: s};
    return s;
  }
  function eventAt(d, i){
    if (i >= d.seq.length) { return null; }
    var ev = {step: off + i, turn: d.turn ? d.turn[i] : null, seq: d.seq[i], kind: d.kind[i],
              type: d.type[i]};
    if (d.tool[i] !== null) { ev.tool_name = d.tool[i]; }
    if (d.origin) { ev.origin = d.origin[i]; }
    if (d.status) { ev.alignment = d.status[i]; }
    ev.text = d.text[i] === null ? all.replay.text[i] : d.text[i];
    return ev;
  }
  function filled(state, i){
    // a step / turn the log leaves null shows the scrubber's own step and turn
    var s = {}, d = all.replay;
    for (var key in state) {
      if (Object.prototype.hasOwnProperty.call(state, key)) { s[key] = state[key]; }
    }
    if ("step" in s && s.step === null) { s.step = off + i; }
    if ("turn" in s && s.turn === null && d.turn) {
      s.turn = d.turn[Math.min(i, d.turn.length - 1)];
    }
    return s;
  }
  function drawState(el, state, other){
    while (el.firstChild) { el.removeChild(el.firstChild); }
    var keys = Object.keys(state).sort();
    for (var k = 0; k < keys.length; k++) {
      var div = document.createElement("div");
      var v = JSON.stringify(state[keys[k]]);
      div.textContent = keys[k] + ": " + v;
      if (other && JSON.stringify(other[keys[k]]) !== v) { div.className = "differs"; }
      el.appendChild(div);
    }
  }
  function show(i){
    i = Math.max(0, Math.min(n - 1, i | 0));
    if (String(slider.value) !== String(i)) { slider.value = String(i); }
    var r = all.replay, b = all.base;
    var rev = eventAt(r, i), bev = b ? eventAt(b, i) : null;
    var rraw = i < r.seq.length ? stateAt("replay", i) : null;
    var braw = b && i < b.seq.length ? stateAt("base", i) : null;
    var rstate = rraw ? filled(rraw, i) : null, bstate = braw ? filled(braw, i) : null;
    function num(v){ return Number(v).toLocaleString("en-US"); }
    var label = "step " + num(off + i) + " of " + num(total - 1) +
      (rev && rev.turn !== null ? " \u00b7 turn " + num(rev.turn) : "") + " \u00b7 replay seq " +
      (rev ? rev.seq + " " + rev.kind + (r.origin ? " (" + r.origin[i] + ")" : "") : "\u2014") +
      " \u00b7 base seq " + (bev ? bev.seq + " " + bev.kind : "\u2014");
    var lab = $("rk-scrub-label");
    lab.textContent = label; lab.setAttribute("title", label);
    $("rk-scrub-event").textContent = rev ? JSON.stringify(rev, null, 2) +
      (rev.text && rev.text.slice(-1) === "\u2026" ? "\n(text cut at a word boundary: the " +
       "transcript shows the whole event at step " + num(rev.step) + ")" : "") : "(no event)";
    $("rk-scrub-base-event").textContent = bev ? JSON.stringify(bev, null, 2) : "(no event)";
    var ch = i < r.delta.length && r.delta[i] ? r.delta[i] : {};
    $("rk-scrub-changes").textContent =
      Object.keys(ch).length ? JSON.stringify(ch, null, 2) : "no change";
    var st = $("rk-scrub-state");
    if (rstate) { drawState(st, rstate, bstate); } else { st.textContent = "(no event)"; }
    st.setAttribute("data-step", String(off + i));
    st.setAttribute("data-json", rraw ? JSON.stringify(rraw) : "null");
    var bst = $("rk-scrub-base-state");
    if (bstate) { drawState(bst, bstate, rstate); } else { bst.textContent = "(no event)"; }
    bst.setAttribute("data-json", braw ? JSON.stringify(braw) : "null");
  }
  slider.addEventListener("input", function(){ show(parseInt(slider.value, 10)); });
  slider.addEventListener("change", function(){ show(parseInt(slider.value, 10)); });
  $("rk-scrub-prev").addEventListener("click", function(){
    show(parseInt(slider.value, 10) - 1); });
  $("rk-scrub-next").addEventListener("click", function(){
    show(parseInt(slider.value, 10) + 1); });
  window.rkScrubTo = show;
  if (n) { show(parseInt(slider.value, 10)); }
})();
"""

_TEMPLATES = {
    "page.html": """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{ csp }}">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>{{ title }}</title><style>{{ css }}</style><script>{{ plotly_js }}</script></head><body>
<header><h1>{{ title }}</h1><p>replaykit report &middot; self-contained: works offline, loads
nothing from the network</p></header>
<nav>{% for s in sections %}<a href="#{{ s.id }}">{{ s.heading }}</a>{% endfor %}</nav>
<main>{% for s in sections %}<section id="{{ s.id }}"><h2>{{ s.heading }}</h2>{{ s.body }}
</section>{% endfor %}</main><script>{{ js }}</script></body></html>""",

    "transcript.html": """<div class="rk-transcript">{% if more or shown < total %}
<p class="note sampled" id="rk-transcript-shown">Showing {{ "{:,}".format(shown) }} of
 {{ "{:,}".format(total) }} events of the run ({{ "the first ones and a window from just before
 the first divergence" if windowed else "the first ones" }}); the rest are not embedded.</p>
{% endif %}{% for it in items %}
{% if it.gap %}<p class="note gap" data-step="{{ it.step }}">&hellip; {{ "{:,}".format(it.gap) }}
 events not shown (steps {{ "{:,}".format(it.step) }}&ndash;{{ "{:,}".format(it.step + it.gap - 1)
 }}) &hellip;</p>
{% elif it.message %}<div class="msg {{ it.kind }}{{ ' unsupported' if it.unsupported }}"
 data-step="{{ it.step }}" id="rk-step-{{ it.step }}"{% if it.origin %}
 data-provenance="{{ it.origin }}"{% endif %}><div class="who">
step {{ it.step }} &middot; {{ it.who }}{% if it.tool %} &middot; {{ it.tool }}{% endif %}
{% if it.ref %} <span class="note">({{ it.ref }})</span>{% endif %}
{% if it.origin %}<span class="origin {{ it.origin }}" title="{{ it.meaning }}">{{ it.badge }}
</span>{% endif %}{% if it.unsupported %}<span class="flag" title="{{ it.unsupported }}">
unsupported</span>{% endif %}{% if it.error %} <b>error</b>{% endif %}
</div>{% if it.unsupported %}<div class="why">{{ it.unsupported }}</div>{% endif %}
{% if it.kind != "model_request" and it.text and not it.detail %}
<div class="body">{{ it.text }}</div>{% endif %}
{% if it.detail %}<details open><summary>{{
 "arguments" if it.kind == "tool_call" else "output" }}</summary><pre>{{ it.detail }}</pre>
</details>{% endif %}<details><summary>{{ "prompt and " if it.kind == "model_request" }}payload
</summary><pre>{{ it.payload }}</pre></details></div>
{% else %}<div class="note" data-step="{{ it.step }}" id="rk-step-{{ it.step }}"
{% if it.origin %} data-provenance="{{ it.origin }}"{% endif %}>step {{ it.step }} &middot;
 {{ it.kind }}{% if it.text %}: {{ it.text|truncate(120) }}{% endif %}{% if it.origin
 %}<span class="origin {{ it.origin }}" title="{{ it.meaning }}">{{ it.badge }}</span>
{% endif %}</div>{% endif %}{% endfor %}
{% if more %}<p class="note">&hellip; {{ "{:,}".format(more) }} more events not shown</p>
{% endif %}</div>""",

    "legend.html": """<dl class="rk-legend" id="rk-provenance-legend"><b>Where each step
 came from:</b> {% for it in items %}<dt><span class="origin {{ it.key }}">{{ it.badge }}</span>
</dt><dd>{{ it.meaning }}</dd>{% endfor %}<dt><span class="flag">unsupported</span></dt>
<dd>the replay cannot support what this step shows (see the findings)</dd></dl>""",

    "runtree.html": """{% macro run(n) %}<li class="run"><details open><summary><b>run
 {{ n.run_id }}</b>{% if n.parent_run_id %} (child of {{ n.parent_run_id }}){% endif %}
 &middot; {{ "{:,}".format(n.events) }} events &middot;
 {{ "{:,}".format(n.model_calls) }} model calls &middot;
 {{ "{:,}".format(n.tool_calls) }} tool calls{% if n.duration is not none %}
 &middot; {{ n.duration|dur }}{% endif %}{% if n.listed is defined and n.listed <
 n.model_calls + n.tool_calls %} <span class="note sampled">(listing the first
 {{ "{:,}".format(n.listed) }} of {{ "{:,}".format(n.model_calls + n.tool_calls) }} calls)</span>
{% endif %}</summary><ul>{% for tn in n.turns %}<li><details open>
<summary>turn {{ tn.turn if tn.turn is not none else "(none)" }} &middot;
 {{ tn.calls|length }} calls{% if tn.duration is not none %} &middot;
 {{ tn.duration|dur }}{% endif %}</summary><ul>{% for c in tn.calls %}<li><div class="row">
<span>{{ "⚙" if c.type == "tool" else "◆" }} {{ c.name }} <span class="note">
{{ c.ref }} &middot; step {{ c.step }}</span></span><span class="dur">{{ c.duration|dur
 if c.duration is not none else "" }}</span><span class="bar">{% if c.left is not none %}
<span class="{{ c.type }}" style="left:{{ c.left }}%;width:{{ c.width }}%"></span>{% endif %}
</span></div></li>{% endfor %}</ul></details></li>{% endfor %}</ul>
{% if n.children %}<ul>{% for ch in n.children %}{{ run(ch) }}{% endfor %}</ul>{% endif %}
</details></li>{% endmacro %}<div class="rk-tree"><ul>{% for r in roots %}{{ run(r) }}
{% endfor %}</ul><p class="note">Bars: when each call started and how long it took, on the
run's own time axis (timestamps of the log; none are drawn when the log has none).</p></div>""",

    "kv.html": """<table class="kv">{% for k, v in items %}<tr><th>{{ k }}</th><td>{{ v }}</td>
</tr>{% endfor %}</table>""",

    "findings.html": """{% if answer %}<p class="answer {{ verdict }}" id="rk-answer"
 data-verdict="{{ verdict }}">{{ answer }}</p>{% endif %}{% if headline %}<p class="headline"
 id="rk-headline">{{ headline }}</p>
{% endif %}{% for group in groups %}<h3>{{ group.title }}</h3><ul class="{{ group.kind }}">
{% for r in group.rows %}<li class="{{ r.kind }}" data-kind="{{ r.kind }}"{% if r.step is
 defined and r.step is not none %} data-step="{{ r.step }}"{% endif %}>{{ r.sentence }}
<a class="ev" href="#{{ r.anchor or r.section }}">{{ "step " ~ r.step ~ " in the transcript"
 if r.anchor else "evidence" }} &rarr;</a></li>{% endfor %}</ul>{% endfor %}""",

    "requirements.html": """{% if not reqs %}<p id="rk-no-requirements">No open requirement:
every divergent tool call got an output.</p>{% else %}<p class="warn"><b>The replay
{{ status }}.</b> {{ reqs|length }} divergent tool call(s) have neither a recorded output nor a
fixture. Each is named below with a fixture that would satisfy it.</p>
{% for r in reqs %}<div class="requirement" id="rk-req-{{ loop.index0 }}">
<h3>{{ r.requirement_id }}: {{ r.tool_name }}</h3>{{ r.table }}
<div class="fixture-spec"><p>Write this fixture (fill in <code>output</code>) into a fixtures
file (<code>{"format": "isplay.fixtures/v1", "fixtures": [ ... ]}</code>) and re-run:</p>
<pre>{{ r.spec_json }}</pre><pre class="cli">{{ r.cli }}</pre>
<p class="note">In Python: <code>result.resume(fixtures)</code> with the same file or a
<code>rk.Fixture</code>.</p></div></div>{% endfor %}{% endif %}""",

    "changes.html": """{% if not n %}<p>No event changed: nothing to show.</p>{% else %}
<p>{{ n }} changed value(s) in {{ events }} event(s): {{ content }} in what the agent asked,
called, received or said, listed first and highlighted{% if bookkeeping %}; then {{ bookkeeping
}}: the envelope (ids, times, working directory, versions, the replay's patch records), listed
but not highlighted{% endif %}. Step through them with the buttons or the <kbd>n</kbd> /
<kbd>p</kbd> keys.</p>
<div class="changes-nav"><button type="button" id="rk-change-prev">&larr; previous change
</button><button type="button" id="rk-change-next">next change &rarr;</button>
<span id="rk-change-label"></span></div>{{ table }}{% endif %}""",

    "scrubber.html": """{% if note %}<p class="note">{{ note }}</p>{% endif %}
<div class="scrubber"><div class="controls">
<button type="button" id="rk-scrub-prev" aria-label="previous step">&larr;</button>
<input type="range" id="rk-scrub" min="0" max="{{ max }}" value="{{ start }}"
 aria-label="step">
<button type="button" id="rk-scrub-next" aria-label="next step">&rarr;</button>
<span id="rk-scrub-label"></span></div>
<div class="panes"><div><h4>{{ side_a or "base (recording)" }}: event at this step</h4>
<pre id="rk-scrub-base-event"></pre></div>
<div><h4>{{ side_b or "replay" }}: event at this step</h4><pre id="rk-scrub-event"></pre></div>
<div><h4>{{ side_a or "base" }}: state after it</h4><div class="state"
 id="rk-scrub-base-state"></div></div>
<div><h4>{{ side_b or "replay" }}: state after it (fields that differ from the {{ side_a or
 "base" }} are marked)</h4>
<div class="state" id="rk-scrub-state"></div>
<h4>{{ side_b or "replay" }}: changed at this step</h4><pre id="rk-scrub-changes"></pre></div>
</div></div>
<script type="application/json" id="rk-scrub-data">{{ data }}</script>""",
}


@lru_cache(maxsize=1)
def _env() -> Environment:
    env = Environment(loader=DictLoader(_TEMPLATES), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["dur"] = _duration
    return env


def _duration(seconds: float | None) -> str:
    """1.234 -> ``1.23 s``; 0.0123 -> ``12.3 ms``; 125 -> ``2 min 5 s``."""
    if seconds is None:
        return ""
    s = float(seconds)
    if s < 1:
        return f"{s * 1000:.3g} ms"
    if s < 60:
        return f"{s:.3g} s"
    return f"{int(s // 60)} min {int(round(s % 60))} s"


def render(name: str, **ctx: Any) -> Markup:
    """Render one of the page's templates (autoescaped) as trusted markup."""
    return Markup(_env().get_template(name).render(**ctx))


@lru_cache(maxsize=1)
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    # The bundle is inlined as-is; "</script" cannot occur in it, but guard anyway.
    js = get_plotlyjs()
    return js.replace("</script", "<\\/script")


def json_script(obj: Any) -> Markup:
    """``obj`` as script-safe JSON markup (for a ``<script type="application/json">``)."""
    return Markup(script_json(obj))


#: sections that open every report, in this order, whatever order they were built in: the
#: question the report answers comes before its answer (docs/report.md)
FIRST_SECTIONS = ("question",)


def reading_order(sections: Sequence[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """``sections`` (id, heading, body) in the order a reader meets them: those named in
    :data:`FIRST_SECTIONS` first, the rest as built.

    >>> [s[0] for s in reading_order([("findings", "", ""), ("question", "", "")])]
    ['question', 'findings']
    """
    first = [s for f in FIRST_SECTIONS for s in sections if s[0] == f]
    return first + [s for s in sections if s[0] not in FIRST_SECTIONS]


def page(title: str, sections: Sequence[tuple[str, str, str]]) -> str:
    """The full HTML document: ``sections`` are (id, heading, trusted HTML body), shown in
    :func:`reading_order`."""
    sections = reading_order(sections)
    return _env().get_template("page.html").render(
        title=title, csp=Markup(_CSP), css=Markup(_CSS), js=Markup(_JS),
        plotly_js=Markup(_plotly_js()),
        sections=[{"id": sid, "heading": head, "body": Markup(body)}
                  for sid, head, body in sections])
