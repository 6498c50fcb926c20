"""Attention Explorer's Streamlit side: entry point, shared state and controls, figures.

``main.py`` is the entry point (``streamlit run app/main.py``); page scripts live in
``pages/``. Figure builders (:mod:`app.figures`) are pure; numbers come from ``engine``.
"""
