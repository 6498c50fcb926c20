"""Attention Explorer's Streamlit side, by role: each sub-package imports only those below it.

``main.py`` is the entry point (``streamlit run app/main.py``), the router and the frame
every page shares; ``registry.py`` the pages; ``cli.py`` the console command. Below them:
``live/`` (charts that follow a control in the browser), ``widgets/`` (the controls a page
draws), ``lecture/`` (tour, presentation mode, share box), ``views/`` (one module per view:
a pure figure, its table, a show), ``data/`` (cached engine access), ``words/`` (what the
pages say) and ``state/`` (the controls, the link, the session). Numbers come from ``engine``.
"""
