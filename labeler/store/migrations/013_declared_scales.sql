-- 013: a rubric may declare its own scale; a human score may be the mean of several people.
--
-- A rubric's scale was one of three names, checked by a CHECK constraint DuckDB cannot drop,
-- so the rubrics table is rebuilt without it (no other table references it). scale_decl holds
-- a declared scale as JSON ({"name", "low", "high", "step", "labels"}); NULL for a named one.
-- labels.n_raters: how many people an imported score is the mean of (a public dataset's
-- annotator mean); NULL for one person's label.

CREATE TABLE rubrics_013 (
    rubric_id      VARCHAR NOT NULL,
    version        INTEGER NOT NULL,
    name           VARCHAR NOT NULL,
    scale          VARCHAR NOT NULL,
    pass_threshold DOUBLE,
    pass_rule      VARCHAR NOT NULL,
    instructions   VARCHAR NOT NULL DEFAULT '',
    author_kind    VARCHAR NOT NULL CHECK (author_kind IN ('human', 'model')),
    author         VARCHAR NOT NULL,
    content_hash   VARCHAR NOT NULL,
    source_file    VARCHAR,
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp,
    scale_decl     VARCHAR,
    PRIMARY KEY (rubric_id, version)
);

INSERT INTO rubrics_013
SELECT rubric_id, version, name, scale, pass_threshold, pass_rule, instructions, author_kind, author,
       content_hash, source_file, created_at, NULL
FROM rubrics;

DROP TABLE rubrics;

ALTER TABLE rubrics_013 RENAME TO rubrics;

ALTER TABLE labels ADD COLUMN n_raters INTEGER;

-- Scales judgements are stored on that no rubric declares (a judge spec's own, MT-Bench's 1-10):
-- their declaration, so a later process reads those judgements on the right grid.
CREATE TABLE declared_scales (
    name       VARCHAR PRIMARY KEY,
    scale_decl VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
);
