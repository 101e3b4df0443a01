-- 006: imports that keep what an export wrote.
--
-- Labels, pair labels and padding audits can now be imported with their history (an edit
-- supersedes the row it replaces, as in the app). Labels and pair labels already record where
-- they came from (`source`); padding audits do now too, so an import can tell its own rows from
-- the app's: a re-import that would change an imported audit is refused, an app audit is not
-- touched. Every audit written before this migration came from the app.

ALTER TABLE padding_audits ADD COLUMN source VARCHAR DEFAULT 'app';
