"""The admin's Withheld page under AppTest (issue 54): who flagged an answer and why, mask, clear."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from judgelab.labeler.store import Store
from tests.app.test_admin_pages import PAGES
from tests.test_withheld import answers_in_queue, assignment_of, seed


@pytest.fixture
def db(store: Store, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setenv("JUDGELAB_DB", str(store.path))
    return store


def open_page(token: str) -> AppTest:
    at = AppTest.from_file(str(PAGES / "admin_withheld.py"), default_timeout=60)
    at.query_params["t"] = token
    return at.run()


def test_the_admin_reads_who_flagged_and_masks_one_answer_and_clears_another(db: Store) -> None:
    ann, bob, _ = seed(db)
    _, token = db.add_rater("boss", role="admin")
    db.flag_author(ann, assignment_of(db, ann, "a1"), note="ends with 'your friendly Gemini'")
    db.flag_author(ann, assignment_of(db, ann, "a2"))
    at = open_page(token)
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert sorted(table["Answer"]) == ["a1", "a2"] and "ends with 'your friendly Gemini'" in set(table["Why"])
    at.text_area(key="withheld_text:a1").set_value("Reset the router, then call us. (edited)")
    at.button(key="withheld_mask:a1").click().run()
    assert "a1 masked" in at.success[0].value
    at.button(key="withheld_clear:a2").click().run()
    assert "a2 cleared" in at.success[0].value
    assert db.withheld_answers().empty
    assert answers_in_queue(db, bob) == {"a1", "a2", "a3"}
    assert db.score_view(bob, assignment_of(db, bob, "a1")).text == "Reset the router, then call us. (edited)"
    assert "No answer is withheld." in [i.value for i in at.info]


def test_a_rater_cannot_open_it(db: Store) -> None:
    seed(db)
    _, token = db.add_rater("dan")
    at = open_page(token)
    assert [e.value for e in at.error] == ["Access denied: this page is for admins."]


def test_the_overview_shows_the_screens_figures(db: Store) -> None:
    seed(db)
    _, token = db.add_rater("boss", role="admin")
    db.record_screen("run-1", [("a1", True, "names its maker", None, 0.0025), ("a2", False, "nothing", None, 0.0025),
                               ("a3", None, "", "no verdict", 0.0025)], judge="fake")
    db.clear_answer("a1", admin="boss")
    at = AppTest.from_file(str(PAGES / "admin_overview.py"), default_timeout=60)
    at.query_params["t"] = token
    at.run()
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown)
    assert ("Author screen: 3 answers screened, 1 flagged as revealing their author, 1 cleared and 0 masked by an "
            "admin, 0 withheld now; 1 replies did not parse (no verdict); cost $0.0075.") in text
