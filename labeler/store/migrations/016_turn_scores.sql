-- 016: a score per assistant turn, for rubrics that rate each turn (turn = 'each', issue 46).
--
-- A label of a conversation under such a rubric keeps its usual scores (overall, criteria: the
-- whole conversation) in `labels`, and one row here per assistant turn (turn 1 is the first
-- assistant turn) on the rubric's scale. Append-only like labels: an edit of the label is a new
-- label with its own rows; new turn scores for an unchanged label are new rows, and the newest
-- row per (label_id, turn) is the current one.

CREATE SEQUENCE seq_turn_score START 1;

CREATE TABLE turn_scores (
    turn_score_id INTEGER PRIMARY KEY DEFAULT nextval('seq_turn_score'),
    label_id      INTEGER NOT NULL,
    turn          INTEGER NOT NULL CHECK (turn >= 1),
    score         DOUBLE NOT NULL,
    created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE INDEX idx_turn_scores_label ON turn_scores (label_id);
