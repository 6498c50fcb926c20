"""The browser tests run with the network outside this machine unplugged.

Each test's page is a context of its own whose requests to anywhere but the local server
are refused and recorded (:func:`browser_support.unplugged_page`); this proves that the
record sees a request that goes out, once the app has asked for nothing outside: plotly.js
included, which the app serves itself.
"""

from __future__ import annotations

import pytest
from browser_support import assert_healthy, open_app


@pytest.mark.browser
def test_plotly_js_is_served_by_the_app_and_a_request_that_goes_out_is_seen(page, app_url):
    scripts = []
    page.on("request", lambda request: scripts.append(request.url))
    open_app(page, app_url + "/attention")
    served = [url for url in scripts if url.endswith("plotly.min.js")]
    assert served
    assert all(url.startswith(app_url) for url in served)
    assert_healthy(page)  # nothing requested from outside this machine
    assert page.outside == []  # the app itself asked for nothing outside
    failed = page.evaluate(
        "() => fetch('https://example.com/probe.js').then(() => false, () => true)"
    )
    assert failed
    assert page.outside == ["https://example.com/probe.js"]
