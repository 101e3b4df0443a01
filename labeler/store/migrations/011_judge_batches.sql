-- 011: the Message Batches of a judge run, one row per batch and one per call in it.
--
-- 003 kept a run's batches as one JSON list in judge_runs.batches, rewritten on every update;
-- a run past the API's limits (100,000 requests or 256 MB per batch) needs several batches,
-- and a batch must be recorded before it is created (write-ahead): a run that dies after the
-- API created the batch but before its id came back finds it again on resume (by its request
-- count and creation time, among the batches the API lists) instead of paying for it twice.
--
-- `batch_id` is NULL from the intent until the API's id is known. `intent_at` is when the
-- intent was recorded (UTC): the batch, if created, was created after it.

CREATE TABLE judge_batches (
    run_id       VARCHAR NOT NULL,
    batch_no     INTEGER NOT NULL,
    batch_id     VARCHAR,
    n_requests   INTEGER NOT NULL,
    bytes        BIGINT NOT NULL DEFAULT 0,
    intent_at    TIMESTAMP NOT NULL,
    submitted_at TIMESTAMP,
    collected_at TIMESTAMP,
    PRIMARY KEY (run_id, batch_no)
);

CREATE TABLE judge_batch_calls (
    run_id    VARCHAR NOT NULL,
    batch_no  INTEGER NOT NULL,
    custom_id VARCHAR NOT NULL,
    PRIMARY KEY (run_id, batch_no, custom_id)
);

-- The batches 003 recorded move here (each was submitted: its id is known).
-- duckdb-only: begin (a PostgreSQL database is made whole by a judgelab that never wrote judge_runs.batches)
CREATE TEMP TABLE _old_batches AS
SELECT b.run_id, b.batch_no, b.entry ->> 'batch_id' AS batch_id,
       CAST(b.entry -> 'custom_ids' AS VARCHAR[]) AS custom_ids,
       coalesce(CAST(b.entry ->> 'collected' AS BOOLEAN), false) AS collected
FROM (
    SELECT run_id, CAST(generate_subscripts(CAST(batches AS JSON[]), 1) AS INTEGER) AS batch_no,
           unnest(CAST(batches AS JSON[])) AS entry
    FROM judge_runs
    WHERE batches IS NOT NULL AND batches NOT IN ('', '[]')
) b;

INSERT INTO judge_batches (run_id, batch_no, batch_id, n_requests, intent_at, submitted_at, collected_at)
SELECT run_id, batch_no, batch_id, len(custom_ids), current_timestamp, current_timestamp,
       CASE WHEN collected THEN current_timestamp END
FROM _old_batches;

INSERT INTO judge_batch_calls (run_id, batch_no, custom_id)
SELECT DISTINCT run_id, batch_no, unnest(custom_ids) FROM _old_batches;

DROP TABLE _old_batches;
-- duckdb-only: end

-- Prompt tokens a judgement wrote to the prompt cache (a part of input_tokens, which counts
-- every uncached prompt token it was billed for), so a run's summary can say how many.
ALTER TABLE judgements ADD COLUMN cache_write_tokens INTEGER DEFAULT 0;
