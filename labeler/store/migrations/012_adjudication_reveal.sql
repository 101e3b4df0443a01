-- 012: whether an adjudication was given blind.
--
-- The Review page adjudicates blind: the answer's family, model and variant are hidden and its
-- text is shown as raters see it (self-identifying spans masked). The admin can reveal them; an
-- adjudication stored after a reveal records it here (TRUE), a blind one FALSE. NULL on every
-- other label (raters' labels, imports, and adjudications stored before 012, when nothing was
-- hidden). A plain nullable column: DuckDB adds it without rebuilding the table.

ALTER TABLE labels ADD COLUMN revealed BOOLEAN;
