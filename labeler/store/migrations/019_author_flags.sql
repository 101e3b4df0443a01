-- 019: answers withheld from raters because they say who wrote them (issue 54).
--
-- Append-only, like rater_holds: each row is one event about one answer, and the newest row per
-- answer is its state. 'rater' (a rater pressed "this answer says who wrote it") and 'screen' (the
-- judge's screen, `judgelab screen`, flagged it) withhold the answer: no rater is dealt it again and
-- raters' pending assignments of it are hidden (they come back, still counting towards k, when the
-- admin decides). 'mask' (an admin edited the text raters see: `shown_text`) and 'clear' (an admin
-- found nothing that unblinds) give it back to the queues. Labels given on an answer that is
-- withheld, or before its mask, are set apart by calibration (labeler.store._withheld).
--
-- `screen_verdicts` holds the screen's reading of each answer per judge run: reveals true/false, or
-- NULL with the parse failure (a reply that does not parse is counted, never a verdict).

CREATE SEQUENCE seq_author_flag START 1;

CREATE TABLE author_flags (
    flag_id    INTEGER PRIMARY KEY DEFAULT nextval('seq_author_flag'),
    answer_id  VARCHAR NOT NULL,
    action     VARCHAR NOT NULL CHECK (action IN ('rater', 'screen', 'mask', 'clear')),
    rater_id   INTEGER,
    by_name    VARCHAR NOT NULL DEFAULT '',
    reason     VARCHAR NOT NULL DEFAULT '',
    shown_text VARCHAR,
    run_id     VARCHAR,
    created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE INDEX idx_author_flags_answer ON author_flags (answer_id);

CREATE TABLE screen_verdicts (
    run_id      VARCHAR NOT NULL,
    answer_id   VARCHAR NOT NULL,
    reveals     BOOLEAN,
    reason      VARCHAR NOT NULL DEFAULT '',
    parse_error VARCHAR,
    cost_usd    DOUBLE,
    created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (run_id, answer_id)
);
