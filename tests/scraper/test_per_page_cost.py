"""What the per-page cost work (issue 17) added besides identical items: the GC threshold."""

from __future__ import annotations

import gc

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from scraper import settings
from scraper.extensions.gcthreshold import GcThreshold


def test_gc_threshold_is_the_settings_and_zero_leaves_pythons() -> None:
    assert settings.EXTENSIONS["scraper.extensions.gcthreshold.GcThreshold"] is not None
    assert settings.GC_GEN0_THRESHOLD >= 10 * 700  # CPython's default
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 11, 12)
        GcThreshold.from_crawler(get_crawler(settings_dict={"GC_GEN0_THRESHOLD": 7000}))
        assert gc.get_threshold() == (7000, 11, 12)
        gc.set_threshold(700, 11, 12)
        with pytest.raises(NotConfigured):
            GcThreshold.from_crawler(get_crawler(settings_dict={"GC_GEN0_THRESHOLD": 0}))
        assert gc.get_threshold() == (700, 11, 12)
    finally:
        gc.set_threshold(*before)
