-- 003: what the probe runner needs on top of 001's judge_runs and judgements.
--
-- A run is resumable: it records the hash of its plan and how many calls the plan holds, so
-- an unfinished run of the same plan can be found and continued, and `finished_at` says when
-- every planned call had an answer. Each judgement names the planned call it answers
-- (`call_id`, unique within a run), so a resumed run re-issues none of the finished calls.
-- `error` is a judge failure that survived the retries (no reply at all), kept apart from
-- `parse_error` (a reply that did not parse): both are recorded, neither becomes a score.
-- `cached_from` points a judgement served from the cache at the judgement that paid for it.
-- `meta` carries the probe's design facts (which shown slot holds the decorated answer,
-- lengths...) that the evidence file needs.

ALTER TABLE judge_runs ADD COLUMN plan_hash VARCHAR;
ALTER TABLE judge_runs ADD COLUMN n_planned INTEGER;
ALTER TABLE judge_runs ADD COLUMN evidence_path VARCHAR;
ALTER TABLE judge_runs ADD COLUMN finished_at TIMESTAMP;
-- Message Batches this run submitted: JSON list of {batch_id, custom_ids, collected}. A run
-- interrupted after submitting collects its batch on resume instead of paying for it twice.
ALTER TABLE judge_runs ADD COLUMN batches VARCHAR DEFAULT '[]';

ALTER TABLE judgements ADD COLUMN call_id VARCHAR;
ALTER TABLE judgements ADD COLUMN error VARCHAR;
ALTER TABLE judgements ADD COLUMN cached_from INTEGER;
ALTER TABLE judgements ADD COLUMN meta VARCHAR DEFAULT '{}';

CREATE INDEX judgements_run_call ON judgements (run_id, call_id);
CREATE INDEX judge_runs_plan ON judge_runs (plan_hash);

-- Model-written perturbations (an LLM padding rewrite), keyed by a hash of the rewriting model,
-- the variant and the original text, so a probe re-run or resumed reuses the same variant
-- (its plan, and so its judge calls, stay identical) and never pays for a rewrite twice.
CREATE TABLE rewrites (
    rewrite_key   VARCHAR PRIMARY KEY,
    variant       VARCHAR NOT NULL,
    model         VARCHAR NOT NULL,
    original      VARCHAR NOT NULL,
    text          VARCHAR NOT NULL,
    length_ratio  DOUBLE NOT NULL,
    warnings      VARCHAR NOT NULL DEFAULT '[]',   -- JSON list
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd      DOUBLE,
    created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp
);
