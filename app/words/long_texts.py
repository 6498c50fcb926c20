"""What a core page says of a long text: what it draws as tiles, what whole, and how (#52).

Pure functions of the text's length and the views' sizes, as :mod:`app.words.wording`'s.
"""

from __future__ import annotations


def long_maps(n, maps, tiles, cells, rest=""):
    """What a core page says of a long text: which maps are tiles, of what, and the zoom.

    ``maps`` names the n × n maps (``"the mask, the masked scores and both weights"``);
    at most ``tiles`` tiles a side; the zoom exact from ``cells`` tokens a side; ``rest``
    what else the page draws and how (a sentence, or empty).
    """
    return (
        f"{n:,} tokens: {maps} are {n:,} × {n:,} cells each, drawn as at most "
        f"{tiles} × {tiles} tiles, each the maximum or "
        "the mean of its block of queries and keys (chosen below; each chart's title says "
        f"which). Beside each, the zoom draws the exact cells with their tokens once it "
        f"covers at most {cells} queries and {cells} keys; click a tile to move it there. "
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
