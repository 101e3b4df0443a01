-- 005: adjudicated labels.
--
-- An admin's adjudicated label of an answer is a row of `labels` with source 'adjudicated'
-- (rater_id and rater_name are the admin's; no assignment_id; no seconds). Keeping it a label
-- row means every label export carries it with its supersession history, and an import that
-- keeps `source` brings it back as an adjudication. It never supersedes a rater's label: a
-- re-adjudication supersedes the previous adjudication of the same answer and rubric version
-- only (labeler/store/_review.py), and every query about raters' labels leaves the source out
-- (CURRENT_LABEL_RULE in labeler/store/_core.py).
--
-- 001 declared `source` with CHECK (source IN ('app', 'import', 'simulated')). DuckDB can
-- neither drop a CHECK nor change a column that has one, and cannot add a column with one, so
-- the column is rebuilt: a new NOT NULL column with the same default, filled, then swapped in.
-- The allowed values are now kept by the store's writers, which each write one fixed source.
-- (DuckDB refuses these ALTERs on a table with an index; `labels` has none.)

ALTER TABLE labels ADD COLUMN source_005 VARCHAR NOT NULL DEFAULT 'app';
UPDATE labels SET source_005 = source;
ALTER TABLE labels DROP COLUMN source;
ALTER TABLE labels RENAME COLUMN source_005 TO source;
