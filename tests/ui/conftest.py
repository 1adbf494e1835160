"""Each test's outcome on its item, so that the browser fixture keeps a screenshot of a failure."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)
