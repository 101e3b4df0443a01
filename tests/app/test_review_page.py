"""The Review page under AppTest, and that no rater page ever shows an adjudication.

Admins get in and raters do not; the filters narrow the lists; the form stores an adjudicated
label with its own source and leaves the raters' labels as they were; storing again supersedes
the previous adjudication only.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from judgelab.labeler.store import ADJUDICATED
from tests.app.test_rate import everything, open_app
from tests.app.test_review import Seeded, raters_rows, seed_review

PAGE = Path(__file__).resolve().parents[2] / "judgelab" / "views" / "admin_review.py"
SECRET = "ADJUDICATION-NOTE-7f3a"


@pytest.fixture
def seeded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Seeded:
    built = seed_review(tmp_path / "review.duckdb")
    monkeypatch.setenv("JUDGELAB_DB", str(built.pool.path))
    return built


def open_review(token: str) -> AppTest:
    at = AppTest.from_file(str(PAGE), default_timeout=60)
    at.query_params["t"] = token
    at.run()
    assert not at.exception, at.exception
    return at


def items(seeded: Seeded, *answers: str) -> list[str]:
    """The item ids the page names ``answers`` by (answer ids carry the family)."""
    found = seeded.store.query("SELECT answer_id, item_id FROM answers")
    by_answer = dict(zip(found["answer_id"], found["item_id"], strict=True))
    return [by_answer[a] for a in answers]


def table(at: AppTest, *columns: str) -> pd.DataFrame:
    for element in at.dataframe:
        if all(c in element.value.columns for c in columns):
            return element.value
    raise AssertionError(f"no table with columns {columns}")


def adjudicate_on_page(at: AppTest, answer_id: str, overall: float, comment: str) -> AppTest:
    at.selectbox(key="review_answer").set_value(answer_id).run()
    prefix = next(s.key for s in at.selectbox if s.key and s.key.endswith(":overall")).removesuffix("overall")
    at.selectbox(key=prefix + "overall").set_value(overall)
    at.selectbox(key=prefix + "tone").set_value(overall)
    at.text_area(key=prefix + "comment").set_value(comment)
    at.button(key="review_submit").click().run()
    assert not at.exception, at.exception
    return at


def test_an_admin_gets_in_and_sees_the_lists(seeded: Seeded) -> None:
    at = open_review(seeded.admin_token)
    assert at.title[0].value == "Review" and not at.error
    a = seeded.answers
    assert table(at, "spread", "scores")["item"].tolist() == items(seeded, a[0], a[2], a[1])
    assert table(at, "flag_reason")["flag_reason"].tolist() == ["not in English"]
    assert table(at, "comment", "overall")["comment"].tolist() == ["far too short"]
    assert at.selectbox(key="review_answer").value == a[0]
    side = table(at, "ann", "bob")
    assert side.loc["overall"].tolist() == ["1", "5"]


def test_a_rater_does_not_get_in(seeded: Seeded) -> None:
    at = open_review(seeded.raters["ann"][1])
    assert [e.value for e in at.error] == ["Access denied: this page is for admins."]
    assert not at.title and not at.dataframe and not at.button


def test_a_missing_or_revoked_token_does_not_get_in(seeded: Seeded) -> None:
    at = AppTest.from_file(str(PAGE), default_timeout=60).run()
    assert "no invite token" in at.error[0].value and not at.dataframe
    seeded.store.revoke_rater("boss")
    at = open_review(seeded.admin_token)
    assert "revoked" in at.error[0].value and not at.dataframe and not at.button


def test_the_filters_narrow_the_lists(seeded: Seeded) -> None:
    a = seeded.answers
    at = open_review(seeded.admin_token)
    at.selectbox(key="review_criterion").set_value("tone").run()
    assert table(at, "spread", "scores")["item"].tolist()[0] == items(seeded, a[1])[0]
    at.selectbox(key="review_criterion").set_value(None)
    at.selectbox(key="review_rater").set_value("carol").run()
    assert not at.exception
    assert table(at, "spread", "scores")["item"].tolist() == items(seeded, a[2])
    assert table(at, "flag_reason").empty
    assert at.selectbox(key="review_answer").options == items(seeded, a[2])
    assert at.selectbox(key="review_answer").value == a[2]


def test_adjudicating_stores_its_own_label_and_readjudicating_supersedes_only_it(seeded: Seeded) -> None:
    store, a0 = seeded.store, seeded.answers[0]
    before = raters_rows(store)
    at = adjudicate_on_page(open_review(seeded.admin_token), a0, 3.0, "ann missed step 2")
    assert any("raters' labels unchanged" in s.value for s in at.success), [s.value for s in at.success]
    adj = store.adjudications("support", 1)
    assert adj[["answer_id", "rater_name", "overall", "comment"]].values.tolist() == [
        [a0, "boss", 3.0, "ann missed step 2"]]
    first = int(adj["label_id"].iloc[0])
    assert store.query("SELECT source FROM labels WHERE label_id = ?", [first])["source"].tolist() == [ADJUDICATED]
    pd.testing.assert_frame_equal(raters_rows(store), before)
    # The side-by-side table now has the adjudication's column, and the form starts from it.
    assert table(at, "ann", "bob", "adjudicated (boss)").loc["overall"].tolist() == ["1", "5", "3"]
    prefix = f"review:{a0}:{first}:"
    assert at.selectbox(key=prefix + "overall").value == 3.0

    at = adjudicate_on_page(at, a0, 4.0, "on reread")
    history = store.label_history(a0).set_index("label_id")
    newest = int(history.index.max())
    assert int(history.loc[newest, "supersedes"]) == first and history.loc[newest, "source"] == ADJUDICATED
    assert history["current"].sum() == 3  # ann's, bob's and the new adjudication
    pd.testing.assert_frame_equal(raters_rows(store), before)
    assert store.adjudications("support", 1)["overall"].tolist() == [4.0]


def test_an_adjudication_without_an_overall_score_is_refused_where_the_admin_looks(seeded: Seeded) -> None:
    at = open_review(seeded.admin_token)
    at.button(key="review_submit").click().run()
    assert any("needs an overall score" in e.value for e in at.error)
    assert seeded.store.adjudications().empty


def test_no_rater_page_shows_an_adjudication(seeded: Seeded) -> None:
    """A rater with the adjudicated answer still to do, and an admin who adjudicated one they rate."""
    store, a1 = seeded.store, seeded.answers[1]
    carol, carol_token = seeded.raters["carol"]
    boss = seeded.admin.rater_id
    store.assign_k([a1], 4, [*(r.rater_id for r, _ in seeded.raters.values()), boss])
    store.adjudicate(boss, a1, rubric_id="support", version=1, overall=5, criteria={"tone": 5}, comment=SECRET)
    for token in (carol_token, seeded.admin_token):
        for page in ("rate.py", "pairwise.py", "audit.py"):
            at = open_app(token, page)
            received = everything(at)
            assert SECRET not in received and "adjudicat" not in received.lower(), page
            if page == "rate.py":
                assert "Ticket 0:" in received  # the adjudicated answer's task is on screen
    # Carol's queue shows a1 undone, with no score given.
    assert store.progress(carol.rater_id).done == 1  # a2 only
    view = store.screen(carol.rater_id).view
    assert view is not None and view.current is None  # type: ignore[union-attr]


def _shown(at: AppTest) -> str:
    """Every text element, caption, table cell and option the page rendered."""
    parts = [e.value for e in (*at.caption, *at.markdown, *at.text, *at.success, *at.info)]
    parts += [str(s.options) for s in at.selectbox]
    parts += [e.value.to_csv() for e in at.dataframe]
    return "\n".join(str(p) for p in parts)


def test_the_adjudicator_reads_blind_until_revealing_and_the_reveal_is_recorded(seeded: Seeded) -> None:
    """Issue 29 item 5: no family, model or variant (nor an answer id carrying one) before a reveal."""
    store, a = seeded.store, seeded.answers
    named = "I am Claude, an AI assistant made by Anthropic. Restart the router."
    store.query("UPDATE answers SET text = ?, self_id_spans = ? WHERE answer_id = ?",
                [named, '[[5, 11, "Claude"], [35, 44, "Anthropic"]]', a[0]])
    at = open_review(seeded.admin_token)
    families = set(store.query("SELECT family FROM answers")["family"])
    shown = _shown(at)
    for secret in (*families, *(str(x) for x in a), "Claude", "Anthropic"):
        assert secret not in shown, secret
    assert "[redacted]" in shown
    # Adjudicate blind: recorded as blind.
    at = adjudicate_on_page(at, a[0], 3.0, "blind")
    assert any(", blind;" in s.value for s in at.success), [s.value for s in at.success]
    assert store.adjudications("support", 1)["revealed"].tolist() == [False]
    # Reveal: family and text appear; an adjudication stored then says so, even if hidden again first.
    at.toggle(key=f"review_reveal:{a[0]}").set_value(True).run()
    assert "Claude, an AI assistant" in _shown(at) and "family " in _shown(at)
    at.toggle(key=f"review_reveal:{a[0]}").set_value(False).run()
    at = adjudicate_on_page(at, a[0], 4.0, "after a look")
    assert store.adjudications("support", 1)["revealed"].tolist() == [True]
    assert any("after revealing the family (recorded)" in s.value for s in at.success)


def test_the_review_lists_show_no_raw_none(seeded: Seeded) -> None:
    """Issue 29 item 9: a label without a comment or flag shows an empty cell, not ``None``."""
    at = open_review(seeded.admin_token)
    for element in at.dataframe:
        frame = element.value
        assert not frame.map(lambda v: v is None or v == "None").any().any(), frame
