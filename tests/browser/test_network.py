"""The browser tests run with the network outside this machine unplugged.

Each test's page is a context of its own whose requests to anywhere but the local server
are refused and recorded (:func:`browser_support.unplugged_page`); this proves that the
record sees a request that goes out.
"""

from __future__ import annotations

import pytest
from browser_support import open_app


@pytest.mark.browser
def test_the_unplugged_network_sees_a_request_that_goes_out(page, app_url):
    open_app(page, app_url + "/attention")
    assert page.outside == []  # the app itself asked for nothing outside
    failed = page.evaluate(
        "() => fetch('https://example.com/probe.js').then(() => false, () => true)"
    )
    assert failed
    assert page.outside == ["https://example.com/probe.js"]
