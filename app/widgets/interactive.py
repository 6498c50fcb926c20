"""The "Download as an interactive page" buttons: a view saved as one self-contained HTML file.

On /attention the scale view of the head shown (:mod:`app.views.scale_view`: the engine's
weights at every stop of the slider, as Plotly frames the page's own slider plays), opening
at the stop the page shows; on /pretrained the line view of the layer shown. The numbers
are taken from the cache when the button is clicked (a hit, or computed again), and the
figure and the page (:func:`app.views.page.html`) are built then too.

What a button keeps between clicks is small: its settings, the head, the labels. Streamlit
keeps a download's callable as long as its session, and a closed tab's session two more
minutes (``server.disconnectedSessionTTL``) in case it reconnects; a callable holding the
run's arrays (a view of ``run.attentions`` keeps the whole array alive) kept each session's
run in memory after the cache budget had dropped it, outside the budget: 34 MB a session
on /pretrained (MiniLM's weights over 350 tokens), 6 MB on /attention (q, k, v and the
mask at d_model 768), enough to take a class's server past 1 GB (issue 55,
docs/benchmarks.md).
"""

from __future__ import annotations

from app.data import layers, models
from app.state import controls, session
from app.views import chart, line_view, page, scale_view
from app.widgets import model_box
from engine.attention import strong_links


def scale_page(container, settings, head, labels):
    """The button of /attention: the scale view of ``head`` in the layer ``settings`` run.

    Parameters
    ----------
    container : a Streamlit container
    settings : app.state.controls.Settings, the page's (its scale is the stop opened at)
    head : int, the head shown
    labels : sequence of n str, the tokens
    """
    unscaled = settings.replace(scale=None)  # q, k and v are any scale's
    run = layers.layer(unscaled)
    if run is None or session.presenting():
        return
    d_k = run.attention.q.shape[-1]
    start = (
        None
        if settings.scale is None
        else controls.nearest(controls.scale_options(d_k, 1), settings.scale)
    )
    name = controls.WEIGHTS_LABELS[settings.weights].split(" (")[0]
    where = f"layer {settings.layer}, head {head}" if settings.trained else f"head {head}"
    title = f"{name}, {where}"
    labels = list(labels)

    def build():
        again = layers.layer(unscaled)
        q, k, v = again.attention.q[head], again.attention.k[head], again.attention.v[head]
        return scale_view.head_figure(q, k, v, labels, again.mask, title, start=start)[0]

    stem = session.file_stem() or chart.settings_slug(session.current(), "", head)
    page.download(
        container,
        "attention_page",
        build,
        f"attention-explorer_scale-view_{stem}",
        title=f"Attention Explorer: the scale, {title}",
        caption="Drag the slider: every stop's weights are the engine's, computed in NumPy.",
    )


def line_page(container, text, layer, heads, threshold, folder, *, hide_special=False):
    """The button of /pretrained: the line view of ``text``'s run in ``layer``, the heads chosen.

    Parameters
    ----------
    container : a Streamlit container
    text : str, the text run (:func:`app.data.models.run` of ``folder`` and ``text``)
    layer : int
    heads : list of int, the heads drawn
    threshold : float, the smallest weight a line stands for
    folder : str or None, the model's checkpoint folder (None: MiniLM)
    hide_special : bool, leave out the first and last token ([CLS] and [SEP]), as the page does
    """
    if session.presenting():  # presentation mode hides the inputs, this one with them
        return
    stem = model_box.file_name(folder)
    heads = list(heads)
    listed = ", ".join(f"H{h}" for h in heads) if heads else "none"
    title = f"{stem}: layer {layer}, heads {listed}"

    def build():
        run = models.run(folder, text)
        cut = slice(1, -1) if hide_special and len(run.labels) > 2 else slice(None)
        links = strong_links(run.attentions[layer][:, cut, cut][heads], threshold)
        return line_view.figure(links, list(run.labels[cut]), heads, threshold, title)

    page.download(
        container,
        "pretrained_lines_page",
        build,
        f"attention-explorer_line-view_{stem}-l{layer}",
        title=f"Attention Explorer: {title}",
        caption="Point at a token to see only its lines; each line's weight is the model's.",
    )
