"""The judge loop in Chromium on the served demo: two judge versions compared, a held-out look counted.

On the package's shared demo: two more fake-judge versions are added (first one lenient by a Likert
point and a half on the ``gpt`` family, then one without it), so the page's defaults compare the
older (A, lenient) with the newer (B). The admin compares them on the tuning part (B is better),
then on the held-out part, and the page counts that look.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pandas as pd
import pytest

from judgelab.calibration.loop import held_out_summary
from tests.browser.conftest import Demo, expect_text, go, main_text, open_page, playwright_api

pytestmark = pytest.mark.browser


def test_the_admin_compares_two_judge_versions_and_the_held_out_look_is_counted(demo: Demo, browser: Any) -> None:
    from judgelab.demo import run_demo_judge
    from judgelab.labeler.examples import example_path

    truth = pd.read_csv(example_path("truth.csv"))
    # The runner calls asyncio.run, which Playwright's own event loop on this thread forbids.
    with ThreadPoolExecutor(1) as pool:
        lenient = pool.submit(run_demo_judge, demo.store, truth, leniency={"gpt": 1.5},
                              model="fake-judge-lenient").result()
        fair = pool.submit(run_demo_judge, demo.store, truth, model="fake-judge-fair").result()
    looks = held_out_summary(demo.store)["looks"]
    page, _ = open_page(browser, f"{demo.url}/?t={demo.admin_token}")
    try:
        go(page, "Judge loop")
        expect_text(page, "farthest from the people first")
        # The selectboxes' defaults: A the older run (lenient), B the newer (fair).
        page.get_by_role("button", name="Compare").click()
        expect_text(page, "Verdict: B is better")
        assert "on the tuning part" in main_text(page)
        page.get_by_text("Read the held-out part").click()
        page.get_by_role("button", name="Compare").click()
        expect_text(page, "on the held-out part")
        playwright_api.expect(page.get_by_test_id("stMetricValue").last).to_have_text(str(looks + 1))
        assert held_out_summary(demo.store)["looks"] == looks + 1
        assert held_out_summary(demo.store)["runs"][-2:] in ([lenient, fair], [fair, lenient])
    finally:
        page.close()
