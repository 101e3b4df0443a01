"""What reaches a rater's browser: markdown that fetches nothing."""

from __future__ import annotations

import pytest

from judgelab.labeler.blinding import inert_markdown


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("![a](https://x.example/p.png)", "!&#91;a](https://x.example/p.png)", id="inline image"),
        pytest.param("![a][logo]\n\n[logo]: https://x.example/p.png", "!&#91;a][logo]\n\n[logo]: https://x.example/p.png",
                     id="reference image"),
        pytest.param(r"\\![a](u)", r"\\!&#91;a](u)", id="after an escaped backslash"),
        pytest.param("See [the docs](https://x.example) now!", "See [the docs](https://x.example) now!",
                     id="links and exclamations stay"),
        pytest.param("", "", id="empty"),
    ],
)
def test_inert_markdown_turns_images_into_text(text: str, expected: str) -> None:
    assert inert_markdown(text) == expected
