-- 010: active designs (calibration/active).
--
-- An active design labels the pool in batches. `active_designs` holds its inputs (target
-- half-width, budget, spending plan, floor, ...) as JSON. Each batch is one `active_batches` row
-- whose `draw_id` is an ordinary design (designs + design_items: the answers the batch asked
-- raters to label, with their inclusion probability and weight) so its assignments carry a
-- design_id like any other. `active_draws` stores, for every pool answer and every batch, what was
-- fixed before the batch was drawn: the probability of its sampling unit, the predicted human
-- label, the judge's verdict and score the plan used, whether the unit was already labelled
-- (`known`: probability 1, no new label) and whether it was drawn. The estimator reads only
-- these rows and the labels, so a later judge run or a re-planned pool cannot change what a
-- batch's probabilities were.

CREATE TABLE active_designs (
    design_id  VARCHAR PRIMARY KEY,
    params     VARCHAR NOT NULL,   -- JSON of the inputs
    created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE active_batches (
    design_id       VARCHAR NOT NULL,
    batch           INTEGER NOT NULL,   -- 1, 2, ...
    draw_id         VARCHAR NOT NULL,   -- designs.design_id of the batch's sampled answers
    weight          DOUBLE NOT NULL,    -- the batch's weight in the estimate, fixed before the draw
    expected_labels DOUBLE NOT NULL,    -- Σ answers x probability over units not yet labelled
    summary         VARCHAR NOT NULL,   -- JSON: floor, probabilities' range, planned variance, ...
    created_at      TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (design_id, batch)
);

CREATE TABLE active_draws (
    design_id      VARCHAR NOT NULL,
    batch          INTEGER NOT NULL,
    answer_id      VARCHAR NOT NULL,
    unit           VARCHAR NOT NULL,   -- the sampling unit: the answer, or its task when paired
    inclusion_prob DOUBLE NOT NULL,
    known          BOOLEAN NOT NULL,
    drawn          BOOLEAN NOT NULL,
    pred_pass      DOUBLE NOT NULL,
    pred_score     DOUBLE,
    judge_pass     DOUBLE NOT NULL,
    judge_score    DOUBLE,
    flipped        BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (design_id, batch, answer_id)
);
