"""The browser side of Attention Explorer: the component that draws every chart, and the page's.

``chart/chart.js`` is the chart component's entry point: it keeps each chart mounted by
its key and updates it in place with ``Plotly.react`` (``st.plotly_chart`` remounts a
chart whose figure changed), plays the scale's engine-computed frames while the slider is
dragged, and reports clicked cells. ``chart/page.js`` is the page component's: the share
box, and what every page needs of the browser (equations fitted to the screen, a run from
the address bar after a lost connection comes back, presentation mode's screen size, the
tour's scroll). Each entry point imports ES modules beside it, one job each, by relative
paths: Streamlit serves every file of the components' asset folder, ``chart/``. Both are
declared in this package's ``pyproject.toml`` (Streamlit finds it beside the package named
after the distribution); plotly.js is copied into ``chart/`` on import: offline, never
from a CDN, and not kept there in git. What is copied is the partial bundle in ``vendor/``
(only the traces the app draws, built by ``scripts/build_plotly.sh``) when it was built
for the installed ``plotly`` package's plotly.js, else that package's full bundle.
"""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path

import plotly
import streamlit as st

ASSET_DIR = Path(__file__).resolve().parent / "chart"
VENDOR_DIR = Path(__file__).resolve().parent / "vendor"
PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
#: The trace types of the partial plotly.js (``scripts/build_plotly.sh``): every one the
#: app's figures use (a test holds the app to them). Scatter is plotly.js's core.
PARTIAL_TRACES = ("scatter", "bar", "heatmap", "image", "table")


def plotly_js_version(path):
    """The plotly.js version a bundle's first comment names ("plotly.js v4.1.1"), or None."""
    with open(path, encoding="utf-8", errors="replace") as file:
        head = file.read(400)
    found = re.search(r"plotly\.js v(\d+\.\d+\.\d+)", head)
    return found.group(1) if found else None


def plotly_js_source(package_js=PLOTLY_JS, vendor_dir=VENDOR_DIR):
    """The plotly.js to serve: the partial bundle built for the package's version, else its own.

    The partial bundle (about a quarter of the full one's 4.8 MB, which the browser spent
    1.5-1.9 s evaluating on a first load) holds only :data:`PARTIAL_TRACES`. It is used
    only for the very plotly.js version of the installed ``plotly`` package, whose figures'
    JSON it draws; with any other version the package's full bundle is served.
    """
    partial = vendor_dir / f"plotly-{plotly_js_version(package_js)}.partial.min.js"
    return partial if partial.exists() else package_js


def copy_plotly_js(source=None, asset_dir=ASSET_DIR):
    """Copy plotly.js (:func:`plotly_js_source`) into the asset directory as plotly.min.js.

    Streamlit serves the component's files only from its ``asset_dir`` and refuses a
    symlink out of it, so the script is copied, unless a copy of the same size is there;
    a changed ``plotly`` package (another size) replaces it. Returns the copy's path.
    """
    source = plotly_js_source() if source is None else source
    target = asset_dir / "plotly.min.js"
    if not target.exists() or target.stat().st_size != source.stat().st_size:
        # A file of this process's own: replicas or test workers starting together in a
        # fresh checkout each copy, and each rename puts the same bytes in place.
        partial = asset_dir / f".{source.name}.{uuid.uuid4().hex}.partial"
        try:
            shutil.copyfile(source, partial)
            partial.replace(target)  # atomic: a concurrent server never serves half a file
        finally:
            partial.unlink(missing_ok=True)
    return target


def chart(**kwargs):
    """Mount one chart (or the scale's slider or frames): ``chart(key=..., data=..., ...)``."""
    return _mounter("chart")(**kwargs)


def page(**kwargs):
    """Mount the page component (``chart/page.js``): the page's browser side, or the share box."""
    return _mounter("page")(**kwargs)


def _mounter(name):
    """Component ``name`` of the manifest, registered with the running Streamlit runtime.

    Registered the first time it is used there: Streamlit reads the manifest when its
    runtime starts, so registering at import would fail outside a server, and each
    AppTest starts a runtime of its own.
    """
    from streamlit.runtime import Runtime

    runtime = id(Runtime.instance())
    if _mounters.get("runtime") != runtime:
        _mounters.clear()
        _mounters["runtime"] = runtime
    if name not in _mounters:
        _mounters[name] = st.components.v2.component(
            f"attention-explorer.{name}", js=f"{name}.js", isolate_styles=False
        )
    return _mounters[name]


_mounters = {}
copy_plotly_js()
