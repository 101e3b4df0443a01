-- 020: crowd studies (issue 57): raters who arrive from a crowd platform (Prolific, MTurk, others)
-- through one study link that carries the platform's participant, study and session ids.
--
-- `crowd_studies` is the study: its link key (in the URL the platform opens; it lets a visitor
-- become a rater of this study only, never an admin), the per-participant quota, the raters per
-- answer (k, as everywhere: exactly-k is the store's rule), the time limit and the completion code
-- or URL. `crowd_items` optionally narrows the study to a list of answers.
--
-- `crowd_participants` ties one (study, platform participant id) to one rater. A participant id
-- reused in another study is another rater there. Times are epoch seconds taken from the server's
-- clock (a DOUBLE on both back-ends): `started` is consent (the clock starts), `deadline` is
-- started + time limit, `ended` the moment the outcome was set: 'completed', 'timed_out' or
-- 'returned'. A timed-out or returned participant's rater is revoked in the same unit of work, so
-- their unanswered items stop counting towards k (DEAD_SCORE_ASSIGNMENTS) and go back to the queue.

CREATE TABLE crowd_studies (
    name            VARCHAR PRIMARY KEY,
    link_key        VARCHAR NOT NULL UNIQUE,
    platform        VARCHAR NOT NULL CHECK (platform IN ('prolific', 'mturk', 'generic')),
    quota           INTEGER NOT NULL,
    k               INTEGER NOT NULL,
    time_limit      DOUBLE NOT NULL,
    places          INTEGER,
    completion_code VARCHAR,
    completion_url  VARCHAR,
    created_at      TIMESTAMP NOT NULL DEFAULT current_timestamp,
    closed_at       TIMESTAMP
);

CREATE TABLE crowd_items (
    study     VARCHAR NOT NULL,
    answer_id VARCHAR NOT NULL,
    PRIMARY KEY (study, answer_id)
);

CREATE TABLE crowd_participants (
    rater_id       INTEGER PRIMARY KEY,
    study          VARCHAR NOT NULL,
    participant_id VARCHAR NOT NULL,
    platform_study VARCHAR NOT NULL DEFAULT '',
    session_id     VARCHAR NOT NULL DEFAULT '',
    arrived        DOUBLE NOT NULL,
    visits         INTEGER NOT NULL DEFAULT 1,
    started        DOUBLE,
    deadline       DOUBLE,
    ended          DOUBLE,
    outcome        VARCHAR CHECK (outcome IN ('completed', 'timed_out', 'returned')),
    UNIQUE (study, participant_id)
);

CREATE INDEX idx_crowd_participants_pid ON crowd_participants (participant_id);
