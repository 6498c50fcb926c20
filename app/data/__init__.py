"""Cached engine access: the only modules with ``st.cache_*`` or :func:`app.data.cache.bounded`."""
