"""Screenshots of every report (and, with --lab, the notebook explorers) for a human to look at.

    python tools/screenshots.py [OUT_DIR] [--lab]

Writes into OUT_DIR (default ``reports/screenshots``, git-ignored): the demo RCA report, a
paused RCA report, a hostile-string report and a cohort report, each as a full page and as one
image per section (``<report>--<section>.png``), after hovering a marker of each figure so the
hover label is in the picture. With ``--lab`` it also runs notebook 06 in JupyterLab (headless
Chromium) and takes the Scrubber, DiffExplorer and Transcript explorers. Needs the dev extras
and Chromium (``/usr/bin/chromium`` or ``REPLAYKIT_CHROMIUM``).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "report")]  # shared test fixtures

CHROMIUM = os.environ.get("REPLAYKIT_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run"]


def build_reports(out: Path) -> dict[str, Path]:
    """Write the four reports as HTML files into ``out``; returns name -> path."""
    from test_report import hostile_result
    from test_report_browser import cohort_frame

    import replaykit as rk
    from replaykit.report import cohort, rca

    data = ROOT / "data" / "isplay"
    log = rk.read_isplay(data, owner="demo", progress=False)
    branch = rk.Branch.load(data / "branch-drop-fraud-clause.json", base=log, tenant_id="demo")
    done = rk.replay(branch, fixtures=data / "fixtures.json")
    paused = rk.replay(branch)
    paths = {}
    for name, res, title in (("demo-rca", done, "RCA-311: removing the fraud clause"),
                             ("paused-rca", paused, "RCA-311 without fixtures")):
        paths[name] = out / f"{name}.html"
        rca(res, title=title, question="Does removing the fraud clause change the outcome?"
            ).save_html(paths[name])
    tmp = Path(tempfile.mkdtemp())
    paths["hostile"] = out / "hostile.html"
    rca(hostile_result(tmp), title="hostile <b>strings</b>", question="q \"quoted\" & 'x'"
        ).save_html(paths["hostile"])
    frame, cs = cohort_frame()
    paths["cohort"] = out / "cohort.html"
    cohort(frame, title="Cohorts 2025-fall vs 2026-spring", question="Did agents get worse?",
           cohorts=cs).save_html(paths["cohort"])
    return paths


def shoot(paths: dict[str, Path], out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    shots = []
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        for name, path in paths.items():
            page = b.new_page(viewport={"width": 1300, "height": 900})
            page.goto(path.resolve().as_uri())
            page.wait_for_load_state("load")
            page.wait_for_timeout(500)
            full = out / f"{name}.png"
            page.screenshot(path=str(full), full_page=True)
            shots.append(full)
            for sid in page.eval_on_selector_all("section", "els => els.map(e => e.id)"):
                el = page.locator(f"section#{sid}")
                if sid == "figures" or sid.startswith("fig"):
                    _hover_first_marker(page, el)
                shot = out / f"{name}--{sid}.png"
                el.screenshot(path=str(shot))
                shots.append(shot)
            page.close()
        b.close()
    return shots


def _hover_first_marker(page: object, section: object) -> None:
    pts = section.locator(".scatterlayer .point")  # type: ignore[attr-defined]
    if pts.count():
        pts.first.hover(force=True)
        page.wait_for_timeout(200)  # type: ignore[attr-defined]


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    out = Path(args[0]) if args else ROOT / "reports" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    shots = shoot(build_reports(out), out)
    if "--lab" in argv:
        from test_notebook_lab import lab_screenshots

        shots += lab_screenshots(out)
    for s in shots:
        print(s)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
