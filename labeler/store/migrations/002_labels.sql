-- 002: what the rater app needs on top of 001.
-- Every label, pair label and audit names the assignment it answers, so the queue can
-- tell exactly which item is done (a rater may see one answer under two rubrics, or a
-- pair in one order only). Audits become append-only like labels: an edit supersedes.

ALTER TABLE labels ADD COLUMN assignment_id INTEGER;
ALTER TABLE pair_labels ADD COLUMN assignment_id INTEGER;
ALTER TABLE padding_audits ADD COLUMN assignment_id INTEGER;
ALTER TABLE padding_audits ADD COLUMN supersedes INTEGER;
