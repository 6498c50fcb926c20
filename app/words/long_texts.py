"""What a core page says of a long text: what it draws as tiles, what whole, and how (#52).

Pure functions of the text's length and the views' sizes, as :mod:`app.words.wording`'s.
"""

from __future__ import annotations


def long_maps(n, maps, tiles, cells, rest="", zoom=True):
    """What a core page says of a long text: which maps are tiles, of what, and the zoom.

    ``maps`` names the n × n maps (``"the mask, the masked scores and both weights"``);
    at most ``tiles`` tiles a side; the zoom exact from ``cells`` tokens a side; ``rest``
    what else the page draws and how (a sentence, or empty); ``zoom`` False: no zoom is drawn.
    """
    beside = (
        f"Beside each, the zoom draws the exact cells with their tokens once it "
        f"covers at most {cells} queries and {cells} keys; click a tile to move it there. "
    )
    return (
        f"{n:,} tokens: {maps} are {n:,} × {n:,} cells each, drawn as at most "
        f"{tiles} × {tiles} tiles, each the maximum or "
        "the mean of its block of queries and keys (chosen below; each chart's title says "
        f"which). {beside if zoom else ''}"
        f"One head's map is computed at a time, never every head's. {rest}"
    ).strip()


def long_features(n, tiled=""):
    """What a core page says of a long text whose views are n × d: drawn whole, nothing pooled.

    ``tiled``: what the page tiles besides (a sentence), if anything.
    """
    return (
        f"{n:,} tokens: every tokens × features matrix below is drawn whole, one row a token "
        "(over 128 features cropped, as the title says), nothing averaged; the layer runs "
        f"without keeping any head's {n:,} × {n:,} weights. {tiled}"
    ).strip()


def random_needs_short(n, n_heads, limit, start, stop):
    """Why the tour's random-against-trained step draws a long text's trained row alone.

    The random model holds every head's weights, ``n_heads`` × n × n, at once.
    """
    cells = n_heads * n * n
    return (
        f"The random side runs a random model's every head over the text: {n_heads} × "
        f"{n:,} × {n:,} = {cells / 1e6:,.0f} million weights at once ({cells * 4 / 1e6:,.0f} "
        f"MB), so it is drawn for texts of at most {limit:,} tokens; this one has {n:,}. Here "
        f"the trained head's row alone, on tokens {start}–{stop - 1} around the query."
    )


def efficient_first(n, n_patterns, first, causal):
    """What /efficient says of a long text: its patterns compared on the first ``first`` tokens."""
    cells = n_patterns * n * n
    rows = (
        "Under the causal mask those queries see no later key, so full softmax's rows are "
        "exactly the whole text's."
        if causal
        else "Without the mask those tokens attend among themselves alone, not to the rest."
    )
    return (
        f"{n:,} tokens: comparing the {n_patterns} patterns draws every weight of each, cell "
        f"by cell: {n_patterns} maps of {n:,} × {n:,}, {cells / 1e6:,.1f} million cells "
        f"({cells * 8 / 1e6:,.0f} MB in float64 before their scores and differences), where a "
        f"page draws at most {first:,} × {first:,} cells a map. So the patterns, their table "
        f"and the sliders below read the first {first:,} tokens alone. {rows} First, the "
        "whole text's full softmax as tiles with a zoom."
    )
