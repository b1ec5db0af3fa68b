"""The HTML page of a report: styles, plotly.js inlined once, the figure and scrubber code."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from ._embed import esc

__all__ = ["page"]

# No URL the page loads: default-src 'none' blocks every fetch, image, font and frame; only
# the inline scripts and styles of the page itself run.
_CSP = ("default-src 'none'; script-src 'unsafe-inline'; "
        "style-src 'unsafe-inline'; img-src data: blob:; font-src data:; connect-src 'none'; "
        "base-uri 'none'; form-action 'none'")

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
table{border-collapse:collapse;font-size:12px;margin:6px 0;max-width:100%}
th,td{border:1px solid #e0e0e0;padding:3px 6px;text-align:left;vertical-align:top;
 word-break:break-word}
th{background:#f5f5f5}
table.kv th{width:230px}
pre{background:#f6f8fa;padding:8px;font-size:11.5px;overflow:auto;max-height:420px;
 white-space:pre-wrap;word-break:break-word;margin:0}
.badge{display:inline-block;padding:2px 10px;border-radius:10px;color:#fff;background:#616161;
 font-weight:600}
.badge.exact,.badge.verified{background:#2e7d32}.badge.aligned{background:#558b2f}
.badge.diverged_but_comparable{background:#ef6c00}
.badge.non_comparable,.badge.broken{background:#c62828}
.warn{background:#fff3e0;border-left:4px solid #ef6c00;padding:6px 10px}
.claim{background:#e3f2fd;border-left:4px solid #1565c0;padding:6px 10px}
.note{color:#666;font-size:12px}
.figure{width:100%;min-height:320px}
.scrubber .controls{display:flex;align-items:center;gap:8px;margin:8px 0}
.scrubber input[type=range]{flex:1}
.scrubber .panes{display:grid;grid-template-columns:1fr 1fr 1fr;gap:10px}
.scrubber h4{margin:4px 0}
#rk-scrub-label{font-family:monospace;font-size:12px;min-width:380px}
tr.div td{background:#ffebee}
"""

# Everything the scripts read comes from <script type="application/json"> elements and is
# written with textContent: no data ever reaches innerHTML.
_JS = r"""
(function(){
  "use strict";
  function json(el){ return JSON.parse(el.textContent); }
  // figures
  var figs = document.querySelectorAll("script.rk-figure");
  for (var k = 0; k < figs.length; k++) {
    var spec = json(figs[k]);
    var target = document.getElementById(figs[k].getAttribute("data-target"));
    if (target && window.Plotly) {
      window.Plotly.newPlot(target, spec.data || [], spec.layout || {},
        {responsive: true, displaylogo: false, showLink: false, showSendToCloud: false,
         showEditInChartStudio: false, typesetMath: false,
         modeBarButtonsToRemove: ["sendDataToCloud"]});
    }
  }
  // scrubber
  var dataEl = document.getElementById("rk-scrub-data");
  if (!dataEl) { return; }
  var d = json(dataEl);
  var slider = document.getElementById("rk-scrub");
  var n = d.seq.length;
  var cache = {i: -1, state: null};
  function clone(o){ return JSON.parse(JSON.stringify(o)); }
  function stateAt(i){
    var s, from;
    if (cache.i >= 0 && cache.i <= i) { s = cache.state; from = cache.i + 1; }
    else { s = clone(d.zero); from = 0; }
    for (var j = from; j <= i; j++) {
      var delta = d.delta[j];
      for (var key in delta) {
        if (Object.prototype.hasOwnProperty.call(delta, key)) { s[key] = delta[key]; }
      }
    }
    cache = {i: i, state: s};
    return s;
  }
  function show(i){
    i = Math.max(0, Math.min(n - 1, i | 0));
    if (String(slider.value) !== String(i)) { slider.value = String(i); }
    var ev = {step: i, seq: d.seq[i], kind: d.kind[i], type: d.type[i]};
    if (d.tool[i] !== null) { ev.tool_name = d.tool[i]; }
    if (d.origin) { ev.origin = d.origin[i]; }
    if (d.status) { ev.alignment = d.status[i]; }
    ev.text = d.text[i];
    var state = stateAt(i);
    document.getElementById("rk-scrub-label").textContent =
      "event " + (i + 1) + " of " + n + " \u00b7 step " + i + " \u00b7 seq " + d.seq[i] +
      " \u00b7 " + d.kind[i] + (d.origin ? " \u00b7 " + d.origin[i] : "");
    document.getElementById("rk-scrub-event").textContent = JSON.stringify(ev, null, 2);
    var ch = d.delta[i];
    document.getElementById("rk-scrub-changes").textContent =
      Object.keys(ch).length ? JSON.stringify(ch, null, 2) : "no change";
    var st = document.getElementById("rk-scrub-state");
    st.textContent = JSON.stringify(state, null, 2);
    st.setAttribute("data-step", String(i));
  }
  slider.addEventListener("input", function(){ show(parseInt(slider.value, 10)); });
  slider.addEventListener("change", function(){ show(parseInt(slider.value, 10)); });
  document.getElementById("rk-scrub-prev").addEventListener("click", function(){
    show(parseInt(slider.value, 10) - 1); });
  document.getElementById("rk-scrub-next").addEventListener("click", function(){
    show(parseInt(slider.value, 10) + 1); });
  window.rkScrubTo = show;
  if (n) { show(parseInt(slider.value, 10)); }
})();
"""


@lru_cache(maxsize=1)
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    # The bundle is inlined as-is; "</script" cannot occur in it, but guard anyway.
    js = get_plotlyjs()
    return js.replace("</script", "<\\/script")


def page(title: str, sections: Sequence[tuple[str, str, str]]) -> str:
    """The full HTML document: ``sections`` are (id, heading, trusted HTML body) in order."""
    nav = "".join(f"<a href='#{esc(sid)}'>{esc(head)}</a>" for sid, head, _ in sections)
    body = "".join(f"<section id='{esc(sid)}'><h2>{esc(head)}</h2>{html}</section>"
                   for sid, head, html in sections)
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{_CSP}\">"
            "<meta name='viewport' content='width=device-width,initial-scale=1'>"
            f"<title>{esc(title)}</title><style>{_CSS}</style>"
            f"<script>{_plotly_js()}</script></head><body>"
            f"<header><h1>{esc(title)}</h1><p>replaykit report &middot; self-contained: "
            "works offline, loads nothing from the network</p></header>"
            f"<nav>{nav}</nav><main>{body}</main><script>{_JS}</script></body></html>")
