-- 022: admins and in-house raters who sign in with an OpenID Connect provider; links that expire
-- (issue 57).
--
-- `email`: the address a rater signs in with instead of a link (lower case; one rater per address,
-- kept by the store: DuckDB cannot add a UNIQUE column to a table). An admin who signs in from the
-- project's admin list gets a row of their own, named by their address, the first time.
-- `expires_at`: when the rater's link stops working (UTC; NULL: never). Admin links get one by
-- default (`judgelab raters add --admin --expires`).

ALTER TABLE raters ADD COLUMN email VARCHAR;
ALTER TABLE raters ADD COLUMN expires_at TIMESTAMP;
