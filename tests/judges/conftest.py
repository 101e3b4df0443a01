"""Fixtures for the judge back-end tests: a small rubric and support-ticket answers."""

from __future__ import annotations

import pytest

from judgelab.labeler.models import Criterion, Rubric

TASK = "My router keeps dropping the connection every evening. What should I do?"

#: A plain support reply with load-bearing steps, a caveat and a number.
ANSWER = (
    "Sorry to hear the connection keeps dropping. "
    "First, restart the router by unplugging it for 30 seconds. "
    "Then check whether the firmware is up to date in the admin page. "
    "If the drops continue, note the exact times they happen. "
    "Make sure no other device is using the same channel. "
    "Finally, contact our support line with the log so we can replace the unit."
)

#: A weaker reply to the same ticket: fewer concrete steps.
WEAK_ANSWER = "Routers sometimes drop connections. Try restarting it."


@pytest.fixture
def task() -> str:
    """The support ticket every test judges answers to."""
    return TASK


@pytest.fixture
def answer() -> str:
    """A plain support reply with steps, a caveat and a number."""
    return ANSWER


@pytest.fixture
def weak_answer() -> str:
    """A thinner reply to the same ticket."""
    return WEAK_ANSWER


@pytest.fixture
def rubric() -> Rubric:
    """A two-criterion 1..5 support-reply rubric (pass at 4)."""
    return Rubric(
        rubric_id="support",
        version=1,
        name="Support reply",
        scale="likert5",
        pass_rule="Overall score of 4 or more.",
        pass_threshold=4.0,
        criteria=(
            Criterion("c1", "Resolves", "Gives the customer steps that fix the problem."),
            Criterion("c2", "Safe", "Warns about anything that could lose the customer data."),
        ),
        instructions="Score the reply as a senior support agent would.",
    )
