"""The live mechanism: charts that follow a control in the browser while it moves.

A page asks for a live section and knows nothing of how it lives::

    right = live.head_section(settings, head, labels)
    live.scale_section(settings, head, labels)

draws the live head control with the raw scores, then the scale slider and every chart it
drives. The engine computes the charts' numbers
at every stop at once, the browser holds them as frames and switches between them while
the slider moves; the section decides how much the browser holds, sends it, keeps the
charts in fragments of their own and their CSVs at the stop shown
(:mod:`app.live.section`). The Python side of the protocol is :mod:`app.live.protocol`
(the frames' binary layout, and which part of a chart follows which array), the slider
:mod:`app.live.slider`, the engine's sweeps :mod:`app.live.sweeps`; the browser's side is
``attention_explorer/chart/`` (``control.js``, ``frames.js``, ``bindings.js``, ``preview.js``).

A head switch is live too (:mod:`app.live.heads`): the browser holds every head of the
layer at the current stop and shows a new one at once, from those numbers.

``live.temperature_slider()`` and ``live.temperature_bars(folder, text)`` are the next
token's temperature on /pretrained (:mod:`app.live.temperature`): bars that play the
engine's frames in the same protocol; the slider needs no pass and is drawn before it.
"""

from app.live.heads import head_section
from app.live.section import scale_section
from app.live.temperature import temperature_bars, temperature_slider

__all__ = ["head_section", "scale_section", "temperature_bars", "temperature_slider"]
