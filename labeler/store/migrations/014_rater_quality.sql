-- 014: rater quality: gold items, attention checks, and pausing a rater's live queue.
--
-- A quality item is an answer whose correct overall score (a range low..high; a single score has
-- low = high) the admin sets. `kind` 'gold' measures a rater's accuracy; 'attention' is an item
-- whose own text tells the rater the answer, and a wrong score is a failed attention check. They
-- live apart from the pool (`answers`, `tasks`), so nothing that reads the pool (judge runs,
-- designs, calibration) can see one; a rater's queue shows them through the same opaque
-- `item_id` and the same page as any answer. Their labels go to `labels` like any other and
-- are left out of every analysis by answer id (CURRENT_LABEL_RULE).
--
-- `rater_holds` is append-only: each row pauses or resumes one rater's live queue; the newest
-- row is the rater's state. Nothing a paused rater labelled is deleted; `exclude_labels` on a
-- pause leaves their labels out of calibration while the pause lasts.

CREATE SEQUENCE seq_rater_hold START 1;

CREATE TABLE quality_items (
    answer_id   VARCHAR PRIMARY KEY,
    item_id     VARCHAR NOT NULL UNIQUE,
    kind        VARCHAR NOT NULL CHECK (kind IN ('gold', 'attention')),
    prompt      VARCHAR NOT NULL,
    text        VARCHAR NOT NULL,
    n_words     INTEGER NOT NULL,
    self_id_spans VARCHAR NOT NULL DEFAULT '[]',
    low         DOUBLE NOT NULL,
    high        DOUBLE NOT NULL,
    explanation VARCHAR NOT NULL DEFAULT '',
    source_file VARCHAR,
    created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE rater_holds (
    hold_id        INTEGER PRIMARY KEY DEFAULT nextval('seq_rater_hold'),
    rater_id       INTEGER NOT NULL,
    action         VARCHAR NOT NULL CHECK (action IN ('pause', 'resume')),
    exclude_labels BOOLEAN NOT NULL DEFAULT false,
    reason         VARCHAR NOT NULL DEFAULT '',
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp
);
