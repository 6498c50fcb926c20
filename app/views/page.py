"""A figure as one self-contained HTML page: plotly.js inlined, nothing fetched from anywhere.

What BertViz's saved views lack: its HTML loads d3, jQuery and require.js from a CDN, so
it draws nothing offline. Here the page carries plotly.js itself (the app's partial bundle
when the figure's traces are all among its own, :data:`attention_explorer.PARTIAL_TRACES`;
else the ``plotly`` package's full one), the figure with its frames (the scale view's
slider plays them with plotly.js alone, :mod:`app.views.scale_view`), and two buttons
that save the figure laid out for a slide as the app's camera does
(:func:`app.views.export.print_layout`, at :data:`app.views.export.EXPORT_SCALE` times). No
script, style sheet, font or MathJax comes from elsewhere: the fonts are the system's.
In a line view (:mod:`app.views.line_view`) a token under the pointer keeps its lines, as
in the app. :func:`download` is the app's "Download as an interactive page" button.
"""

from __future__ import annotations

import html as html_text
import json
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

import attention_explorer
from app.views import axes, export

#: What the app's button says.
BUTTON_LABEL = "Download as an interactive page"

# A token of the line view's query column (trace 0) under the pointer keeps the lines from
# it, one of the key column (trace 1) the lines into it, as the app's chart component does:
# each shape's path is "M0,q L1,k …", and plotly.js draws the same segments in pixels.
_PAGE_SCRIPT = """
const gd = document.getElementById("view");
function laidOut() {
  const layout = {...gd.layout, paper_bgcolor: "white", plot_bgcolor: "white", ...PRINT,
    font: {...(gd.layout.font || {}), color: "#222", ...(PRINT.font || {})}, sliders: []};
  for (const axis of Object.keys(PRINT).filter((name) => /^[xy]axis\\d*$/.test(name))) {
    layout[axis] = {...(gd.layout[axis] || {}), ...PRINT[axis]};
  }
  return layout;
}
function save(format) {
  const layout = laidOut();
  return Plotly.downloadImage({data: gd.data, layout}, {format, filename: FILENAME,
    width: layout.width, height: layout.height, scale: SCALE});
}
const buttons = ["png", "svg"].map((format) => ({
  name: `Save as ${format.toUpperCase()}, laid out for a slide`,
  icon: Plotly.Icons.camera, click: () => save(format)}));
function keepLines(point) {
  if (gd.layout.meta !== LINE_VIEW) return;
  const side = point && point.curveNumber <= 1 ? point.curveNumber : null;
  for (const path of gd.querySelectorAll(".shapelayer path[data-index]")) {
    const shape = gd._fullLayout.shapes[Number(path.dataset.index)];
    if (!shape || typeof shape.path !== "string") continue;
    if (path.getAttribute("d") !== path.aeShown) path.aeAll = path.getAttribute("d");
    let d = path.aeAll;
    if (side !== null) {
      const ends = [...shape.path.matchAll(/M0,(\\d+)L1,(\\d+)/g)].map((m) => Number(m[side + 1]));
      d = path.aeAll.split("M").slice(1).filter((_, j) => ends[j] === point.pointNumber)
        .map((s) => `M${s}`).join("");
    }
    path.setAttribute("d", d);
    path.aeShown = d;
  }
}
Plotly.newPlot(gd, {data: FIGURE.data, layout: FIGURE.layout, frames: FIGURE.frames || [],
  config: {responsive: true, displaylogo: false, modeBarButtonsToRemove: ["toImage"],
    modeBarButtonsToAdd: buttons}}).then(() => {
  gd.on("plotly_hover", (event) => keepLines(event.points[0]));
  gd.on("plotly_unhover", () => keepLines(null));
});
"""


def standalone(fig):
    """``fig`` as the app's chart component draws it, in place, for plotly.js on its own.

    The component themes every figure it draws (``attention_explorer/chart/theme.js``):
    axes that make room for their labels (``automargin``), and no plotly.py template (a
    white page). Outside the app, in a notebook or a saved page, the figure carries both.
    Returns ``fig``.
    """
    fig.layout.template = None
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    return fig


def plotly_js(fig):
    """The plotly.js a page of ``fig`` inlines: the app's partial bundle if it draws every trace."""
    source = attention_explorer.plotly_js_source()
    types = {trace.type for trace in fig.data} | {
        trace.type for frame in fig.frames for trace in frame.data
    }
    if source != attention_explorer.PLOTLY_JS and types <= set(attention_explorer.PARTIAL_TRACES):
        return Path(source).read_text(encoding="utf-8")
    return get_plotlyjs()


def _script_safe(text):
    """JSON that cannot end the ``<script>`` element it is written in."""
    return text.replace("</", "<\\/")


def html(fig, title="Attention Explorer", caption="", filename="attention-explorer"):
    """``fig`` as one self-contained HTML page (a str): plotly.js, the figure, its frames.

    Parameters
    ----------
    fig : plotly Figure
    title : str, the page's title (the browser's tab)
    caption : str, optional, a line of text under the figure (plain text, escaped)
    filename : str, the name the slide buttons save the image under, without extension
    """
    spec = pio.to_json(standalone(go.Figure(fig)), validate=False)
    constants = {
        "FIGURE": spec,
        "PRINT": json.dumps(export.print_layout(fig)),
        "FILENAME": json.dumps(filename),
        "SCALE": json.dumps(export.EXPORT_SCALE),
        "LINE_VIEW": json.dumps(axes.LINE_VIEW),
    }
    declared = "".join(
        f"const {name} = {_script_safe(value)};\n" for name, value in constants.items()
    )
    note = f'<p style="margin:0 12px">{html_text.escape(caption)}</p>' if caption else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html_text.escape(title)}</title>\n"
        "<style>body { margin: 8px; font-family: system-ui, sans-serif; }</style>\n"
        f'</head>\n<body>\n<div id="view"></div>\n{note}\n'
        f"<script>{plotly_js(fig)}</script>\n"
        f"<script>\n{declared}{_PAGE_SCRIPT}</script>\n</body>\n</html>\n"
    )


def download(container, key, build, file_name, title="Attention Explorer", caption=""):
    """The app's "Download as an interactive page" button: :func:`html` of ``build()``.

    The page is built when the button is clicked, not at every run (a scale view of 128
    tokens is megabytes).

    Parameters
    ----------
    container : a Streamlit container
    key : str, the button's key
    build : callable returning the plotly Figure
    file_name : str, the file's name without ``.html``
    title, caption : str, as in :func:`html`
    """
    container.download_button(
        BUTTON_LABEL,
        data=lambda: html(build(), title, caption, file_name),
        file_name=f"{file_name}.html",
        mime="text/html",
        key=key,
        on_click="ignore",
        type="tertiary",
        icon=":material/download:",
    )


def save(fig, path, title="Attention Explorer", caption=""):
    """Write :func:`html` of ``fig`` to ``path``; returns its size in bytes."""
    path = Path(path)
    text = html(fig, title, caption, path.stem)
    path.write_text(text, encoding="utf-8")
    return len(text.encode("utf-8"))
