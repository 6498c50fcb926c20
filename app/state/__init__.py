"""State and URL: the shared controls (pure), a view's link (pure), and the session."""
