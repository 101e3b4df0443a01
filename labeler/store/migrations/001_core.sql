-- 001: the core schema. Every table judgelab needs on day one.
-- Ids that users import keep their own values (VARCHAR); rows judgelab creates get
-- sequence ids. Nothing is ever deleted: labels are append-only and an edit is a new
-- row that names the row it supersedes.

CREATE SEQUENCE seq_rater START 1;
CREATE SEQUENCE seq_assignment START 1;
CREATE SEQUENCE seq_label START 1;
CREATE SEQUENCE seq_pair_label START 1;
CREATE SEQUENCE seq_audit START 1;
CREATE SEQUENCE seq_judgement START 1;
CREATE SEQUENCE seq_event START 1;

CREATE TABLE rubrics (
    rubric_id      VARCHAR NOT NULL,
    version        INTEGER NOT NULL,
    name           VARCHAR NOT NULL,
    scale          VARCHAR NOT NULL CHECK (scale IN ('binary', 'likert5', 'numeric100')),
    pass_threshold DOUBLE,
    pass_rule      VARCHAR NOT NULL,
    instructions   VARCHAR NOT NULL DEFAULT '',
    author_kind    VARCHAR NOT NULL CHECK (author_kind IN ('human', 'model')),
    author         VARCHAR NOT NULL,
    content_hash   VARCHAR NOT NULL,
    source_file    VARCHAR,
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (rubric_id, version)
);

CREATE TABLE rubric_criteria (
    rubric_id    VARCHAR NOT NULL,
    version      INTEGER NOT NULL,
    position     INTEGER NOT NULL,
    criterion_id VARCHAR NOT NULL,
    name         VARCHAR NOT NULL,
    description  VARCHAR NOT NULL,
    PRIMARY KEY (rubric_id, version, criterion_id)
);

CREATE TABLE tasks (
    task_id                VARCHAR PRIMARY KEY,
    prompt                 VARCHAR NOT NULL,
    category               VARCHAR,
    reference_answer       VARCHAR,
    reference_author_kind  VARCHAR,
    reference_author       VARCHAR,
    created_at             TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE answers (
    answer_id        VARCHAR PRIMARY KEY,
    -- the opaque id raters see instead of answer_id (which may encode family names)
    item_id          VARCHAR NOT NULL UNIQUE,
    task_id          VARCHAR NOT NULL,
    family           VARCHAR NOT NULL,
    model            VARCHAR NOT NULL,
    variant          VARCHAR NOT NULL DEFAULT 'original',
    parent_answer_id VARCHAR,
    text             VARCHAR NOT NULL,
    n_words          INTEGER NOT NULL,
    n_chars          INTEGER NOT NULL,
    -- JSON list of [start, end, matched text, pattern] self-identifying spans
    self_id_spans    VARCHAR NOT NULL DEFAULT '[]',
    created_at       TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- Pairs in the judge-probe format (prompt, answer_a, answer_b, gold).
CREATE TABLE pairs (
    pair_id   VARCHAR PRIMARY KEY,
    prompt    VARCHAR NOT NULL,
    answer_a  VARCHAR NOT NULL,
    answer_b  VARCHAR NOT NULL,
    gold      VARCHAR,
    created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE raters (
    rater_id   INTEGER PRIMARY KEY DEFAULT nextval('seq_rater'),
    name       VARCHAR NOT NULL UNIQUE,
    role       VARCHAR NOT NULL CHECK (role IN ('rater', 'admin')),
    token_hash VARCHAR NOT NULL UNIQUE,
    simulated  BOOLEAN NOT NULL DEFAULT false,
    created_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
    revoked_at TIMESTAMP
);

-- One row per (rater, item) the rater is asked to label. kind: 'score' (one answer),
-- 'pair' (two answers; shown_left/shown_right record the counterbalanced sides),
-- 'audit' (original vs rewritten variant).
CREATE TABLE assignments (
    assignment_id INTEGER PRIMARY KEY DEFAULT nextval('seq_assignment'),
    rater_id      INTEGER NOT NULL,
    kind          VARCHAR NOT NULL CHECK (kind IN ('score', 'pair', 'audit')),
    answer_id     VARCHAR NOT NULL,
    answer_b_id   VARCHAR,
    queue_pos     INTEGER NOT NULL,
    rubric_id     VARCHAR,
    rubric_version INTEGER,
    design_id     VARCHAR,
    is_overlap    BOOLEAN NOT NULL DEFAULT false,
    created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp,
    UNIQUE (rater_id, kind, answer_id, answer_b_id)
);

-- Append-only. The current label of (rater, answer, rubric) is the newest row that no
-- other row supersedes.
CREATE TABLE labels (
    label_id       INTEGER PRIMARY KEY DEFAULT nextval('seq_label'),
    rater_id       INTEGER NOT NULL,
    rater_name     VARCHAR NOT NULL,
    answer_id      VARCHAR NOT NULL,
    rubric_id      VARCHAR,
    rubric_version INTEGER,
    overall        DOUBLE,
    passed         BOOLEAN,
    criteria       VARCHAR NOT NULL DEFAULT '{}',   -- JSON {criterion_id: score}
    comment        VARCHAR NOT NULL DEFAULT '',
    flag_reason    VARCHAR,                         -- set when the item is unrateable
    seconds        DOUBLE,
    supersedes     INTEGER,
    source         VARCHAR NOT NULL DEFAULT 'app' CHECK (source IN ('app', 'import', 'simulated')),
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- preference is from the point of view of the answer shown on the LEFT:
-- +2 left much better ... -2 right much better. shown_left/right record the mapping.
CREATE TABLE pair_labels (
    pair_label_id  INTEGER PRIMARY KEY DEFAULT nextval('seq_pair_label'),
    rater_id       INTEGER NOT NULL,
    rater_name     VARCHAR NOT NULL,
    shown_left     VARCHAR NOT NULL,
    shown_right    VARCHAR NOT NULL,
    preference     INTEGER NOT NULL CHECK (preference BETWEEN -2 AND 2),
    comment        VARCHAR NOT NULL DEFAULT '',
    seconds        DOUBLE,
    supersedes     INTEGER,
    source         VARCHAR NOT NULL DEFAULT 'app' CHECK (source IN ('app', 'import', 'simulated')),
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE padding_audits (
    audit_id      INTEGER PRIMARY KEY DEFAULT nextval('seq_audit'),
    rater_id      INTEGER NOT NULL,
    original_id   VARCHAR NOT NULL,
    rewrite_id    VARCHAR NOT NULL,
    length_ratio  DOUBLE NOT NULL,
    adds_content  BOOLEAN NOT NULL,
    note          VARCHAR NOT NULL DEFAULT '',
    seconds       DOUBLE,
    created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- Queue events that are not labels (skip, open) so resume and timing work.
CREATE TABLE queue_events (
    event_id      INTEGER PRIMARY KEY DEFAULT nextval('seq_event'),
    rater_id      INTEGER NOT NULL,
    assignment_id INTEGER NOT NULL,
    event         VARCHAR NOT NULL CHECK (event IN ('open', 'skip')),
    created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE judge_runs (
    run_id         VARCHAR PRIMARY KEY,
    judge_kind     VARCHAR NOT NULL,       -- anthropic | fake | import
    model          VARCHAR NOT NULL,
    family         VARCHAR,                -- the judge's own model family
    rubric_id      VARCHAR,
    rubric_version INTEGER,
    params         VARCHAR NOT NULL DEFAULT '{}',   -- JSON
    note           VARCHAR NOT NULL DEFAULT '',
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE judgements (
    judgement_id      INTEGER PRIMARY KEY DEFAULT nextval('seq_judgement'),
    run_id            VARCHAR NOT NULL,
    -- sha256 of (model, system, messages, parameters): identical calls share it
    cache_key         VARCHAR NOT NULL,
    kind              VARCHAR NOT NULL CHECK (kind IN ('pointwise', 'pairwise')),
    format            VARCHAR NOT NULL,
    task_id           VARCHAR,
    answer_id         VARCHAR,
    answer_b_id       VARCHAR,
    order_shown       VARCHAR,          -- 'AB' or 'BA' for pairwise calls
    probe             VARCHAR,
    arm               VARCHAR,
    trial             INTEGER,
    value             DOUBLE,           -- parsed score / verdict; NULL when unparsed
    passed            BOOLEAN,
    parse_error       VARCHAR,          -- why the reply did not parse; NULL when parsed
    raw               VARCHAR,
    input_tokens      INTEGER,
    output_tokens     INTEGER,
    cache_read_tokens INTEGER,
    cost_usd          DOUBLE,
    latency_s         DOUBLE,
    source            VARCHAR NOT NULL DEFAULT 'judge' CHECK (source IN ('judge', 'import', 'cache')),
    created_at        TIMESTAMP NOT NULL DEFAULT current_timestamp
);
CREATE INDEX judgements_cache ON judgements (cache_key);

CREATE TABLE designs (
    design_id  VARCHAR PRIMARY KEY,
    params     VARCHAR NOT NULL,   -- JSON of the inputs
    summary    VARCHAR NOT NULL,   -- JSON of the expected precision and hours
    applied_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE design_items (
    design_id      VARCHAR NOT NULL,
    answer_id      VARCHAR NOT NULL,
    stratum        VARCHAR NOT NULL,
    inclusion_prob DOUBLE NOT NULL,
    weight         DOUBLE NOT NULL,
    n_raters       INTEGER NOT NULL,
    PRIMARY KEY (design_id, answer_id)
);

-- Project- and rubric-level settings (e.g. whether self-identifying spans are masked).
CREATE TABLE settings (
    scope VARCHAR NOT NULL,     -- 'project' or 'rubric:<id>'
    key   VARCHAR NOT NULL,
    value VARCHAR NOT NULL,
    PRIMARY KEY (scope, key)
);
