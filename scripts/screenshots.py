"""Screenshots of every page of the app, for the README: ``assets/screenshots/<page>.png``.

Serves ``app/main.py`` on a free port, opens each page the router lists in headless
Chromium (Debian's ``/usr/bin/chromium``) at the default settings, waits until the script
has finished and every chart is drawn, grows the window to the height of the page's
content (Streamlit scrolls inside its own container, so a "full page" shot of the
document would stop at the window), and saves the shot. A shot larger than
``--max-kb`` is reduced to a 256-colour palette, which keeps the figures legible.

Run: ``python3 scripts/screenshots.py [--out assets/screenshots] [--width 1280]``; with
``--present`` the pages open in presentation mode (``?present=1``) and the shots are named
``<page>-present.png``: one projector screen each (16:9 at ``--width``), since the mode
lays every figure out to fit the screen it is shown on, and a window grown to the page's
height would be a screen no projector has.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
# The server and Chromium come from tests/support/harness.py, as in the browser tests and the
# benchmarks (pytest puts that folder on sys.path); run as a file, this script does it here.
sys.path.insert(0, str(ROOT / "tests" / "support"))
from harness import NOT_CHARTS, chromium, serve_app  # noqa: E402

from app import registry  # noqa: E402

MAX_HEIGHT = 8000

#: The script has run and every chart in the window is drawn: one below it waits to come
#: near (``data-away``), which it does once the window is grown to the page's height.
_SETTLED = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.dataset.testScriptState !== 'notRunning') return false;
    const charts = document.querySelectorAll('.stBidiComponent');
    const below = c => c.querySelector('.ae-chart[data-away]')
        && c.getBoundingClientRect().top > window.innerHeight;
    const hidden = c => !c.getClientRects().length;  // presentation mode hides expanders
    return [...charts].every(c => c.closest('details:not([open])') || below(c) || hidden(c)
        || c.querySelector('NOT_CHARTS, .ae-chart .main-svg'));
}""".replace("NOT_CHARTS", NOT_CHARTS)

#: Presentation mode has laid the figures out for this window (app.state.session.viewport).
_SCREEN_KNOWN = """() => {
    const marker = document.querySelector('.ae-viewport');
    return !marker || marker.dataset.known === marker.dataset.size;
}"""

_CONTENT_HEIGHT = """() => {
    const block = document.querySelector('[data-testid="stMainBlockContainer"]');
    const sidebar = document.querySelector('[data-testid="stSidebarUserContent"]');
    const bottom = el => el ? el.getBoundingClientRect().top + el.scrollHeight : 0;
    return Math.ceil(Math.max(bottom(block), bottom(sidebar)));
}"""


def page_paths():
    """Every page's URL path, from the registry the router is built from.

    The default page is served at the root: Streamlit ignores its ``url_path``.
    """
    return ["" if page.default else page.url_path for page in registry.PAGES]


def shot_name(path, present):
    """The file a page's shot is saved in: ``home.png`` for the root page."""
    name = path or next(page.url_path for page in registry.PAGES if page.default)
    return f"{name}-present.png" if present else f"{name}.png"


def settle(page):
    page.wait_for_timeout(300)
    page.wait_for_function(_SETTLED, polling=100, timeout=180_000)
    page.wait_for_timeout(700)  # Streamlit fades elements in


def compact_png(png, max_kb):
    """The PNG as is when small enough, else reduced to a 256-colour palette."""
    if len(png) <= max_kb * 1024:
        return png
    image = Image.open(io.BytesIO(png)).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(out, "PNG", optimize=True)
    return out.getvalue()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "assets" / "screenshots")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--max-kb", type=int, default=500)
    parser.add_argument("--present", action="store_true", help="in presentation mode")
    parser.add_argument("pages", nargs="*", help="URL paths (default: every page)")
    args = parser.parse_args()
    args.out = args.out.resolve()  # the server runs elsewhere; say where the shots went
    args.out.mkdir(parents=True, exist_ok=True)

    with serve_app(ROOT / "app" / "main.py") as (url, _), chromium() as browser:
        context = browser.new_context(viewport={"width": args.width, "height": 900})
        page = context.new_page()
        for path in args.pages or page_paths():
            if args.present:
                height = round(args.width * 9 / 16)
                page.set_viewport_size({"width": args.width, "height": height})
                page.goto(f"{url}/{path}?present=1")
                settle(page)
                page.wait_for_function(_SCREEN_KNOWN, polling=100)
                settle(page)  # the run the screen's size started
                png = compact_png(page.screenshot(), args.max_kb)
                target = args.out / shot_name(path, args.present)
                target.write_bytes(png)
                print(f"{target}: {args.width}×{height}, {len(png) / 1024:.0f} KB")
                continue
            page.set_viewport_size({"width": args.width, "height": 900})
            page.goto(f"{url}/{path}")
            height = 900
            for _ in range(4):  # charts mount after the first run settles: grow until still
                settle(page)
                content = min(page.evaluate(_CONTENT_HEIGHT) + 40, MAX_HEIGHT)
                if content == height:
                    break
                height = content
                page.set_viewport_size({"width": args.width, "height": height})
            png = compact_png(page.screenshot(), args.max_kb)
            target = args.out / shot_name(path, args.present)
            target.write_bytes(png)
            print(f"{target}: {args.width}×{height}, {len(png) / 1024:.0f} KB")


if __name__ == "__main__":
    main()
