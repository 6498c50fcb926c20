"""One module per view: a pure ``figure(...)``, the ``table(...)`` of its CSV, a ``show(...)``."""
