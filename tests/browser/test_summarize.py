"""The summarize page in a real browser: the highlighted summary, its CSV, a new document."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from browser_support import assert_healthy, open_app, query, wait_settled, z_shape

from app.data import documents
from engine import summarize as sm

pytestmark = pytest.mark.browser

N_DEFAULT = len(sm.split_sentences(documents.DEFAULT_DOCUMENT))


def test_the_summary_is_highlighted_and_its_csv_is_the_top_k(page, app_url):
    open_app(page, app_url + "/summarize?k=3")
    assert_healthy(page)
    box = page.locator(".st-key-summarize_text textarea")
    assert box.input_value() == documents.DEFAULT_DOCUMENT
    assert z_shape(page, "summarize_similarity") == [N_DEFAULT, N_DEFAULT]
    assert z_shape(page, "summarize_attention") == [N_DEFAULT, N_DEFAULT]
    main = page.locator('[data-testid="stMain"]')
    highlighted = main.locator("span", has_text=re.compile(r"\w")).filter(
        has=page.locator("xpath=self::*[contains(@style, 'background')]")
    )
    assert highlighted.count() == 3
    with page.expect_download() as download:
        page.locator(".st-key-summarize_csv button").click()
    assert download.value.suggested_filename == "attention-explorer_summary_k3.csv"
    frame = pd.read_csv(download.value.path())
    assert len(frame) == N_DEFAULT
    assert frame["LexRank score"].sum() == pytest.approx(1.0, abs=1e-5)
    top = set(frame["LexRank score"].nlargest(3).index)
    assert set(frame.index[frame["in summary"]]) == top
    assert set(highlighted.all_inner_texts()) == set(frame["text"][frame["in summary"]])


def test_a_new_document_goes_into_the_link(page, app_url):
    open_app(page, app_url + "/summarize")
    box = page.locator(".st-key-summarize_text textarea")
    box.fill("Rain fell all day. The river rose. By night the bridge was closed. We stayed in.")
    box.press("Control+Enter")
    page.wait_for_url(re.compile(r"[?&]text="))
    wait_settled(page)
    assert_healthy(page)
    assert query(page)["text"].startswith("Rain fell all day.")
    assert z_shape(page, "summarize_similarity") == [4, 4]


def test_presentation_mode_keeps_the_summary_and_the_figures(page, app_url):
    open_app(page, app_url + "/summarize?present=1")
    assert_healthy(page)
    assert not page.locator(".st-key-summarize_text textarea").is_visible()
    assert page.locator('[data-testid="stDownloadButton"]').count() == 0
    assert "Extractive, not abstractive" in page.locator('[data-testid="stMain"]').inner_text()
