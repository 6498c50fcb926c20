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
after the distribution); plotly.js is copied into ``chart/`` from the ``plotly`` package on
import: offline, never from a CDN, and not kept in git.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import plotly
import streamlit as st

ASSET_DIR = Path(__file__).resolve().parent / "chart"
PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"


def copy_plotly_js(source=PLOTLY_JS, asset_dir=ASSET_DIR):
    """Copy plotly.js into the asset directory unless an identical-sized copy is there.

    Streamlit serves the component's files only from its ``asset_dir`` and refuses a
    symlink out of it, so the script is copied; a changed ``plotly`` package (another
    size) replaces it. Returns the copy's path.
    """
    target = asset_dir / source.name
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
