"""The controls a page draws: the shared sidebar, pickers, and the notices every page shows."""
