-- 021: the audit trail (issue 57 point 3).
--
-- One row per admin action: who (`actor`: `cli:<os user>` for the command line, `admin:<name>` for
-- an admin page), when, what (`action`, e.g. 'import', 'assign', 'revoke', 'adjudicate', 'pause',
-- 'export', 'setting'), on what (`target`: a rater, an answer, a file, a setting) and the rest as a
-- JSON object (`detail`: counts, reasons). Written in the same transaction as the action it records,
-- so an action that rolls back leaves no row. Append-only. Raters' own actions (their labels,
-- flags, skips) are not here: the labels tables hold them.

CREATE SEQUENCE seq_audit_log START 1;

CREATE TABLE audit_log (
    entry_id   INTEGER PRIMARY KEY DEFAULT nextval('seq_audit_log'),
    done_at    TIMESTAMP NOT NULL DEFAULT current_timestamp,
    actor      VARCHAR NOT NULL,
    action     VARCHAR NOT NULL,
    target     VARCHAR NOT NULL DEFAULT '',
    detail     VARCHAR NOT NULL DEFAULT '{}'
);
