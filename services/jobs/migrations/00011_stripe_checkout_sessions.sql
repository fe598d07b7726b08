-- +goose Up
-- The Stripe Checkout Session a job's payment page last opened, while it can
-- still be paid: the page opened again (another tab, the back button) hands
-- over to the same session instead of a second one the poster could pay too.
-- amount and currency are the checkout's, so that a changed price opens a new
-- session (after expiring this one).
CREATE TABLE stripe_checkout_sessions (
    job_id     bigint      PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    session_id text        NOT NULL,
    url        text        NOT NULL,
    expires_at timestamptz NOT NULL,
    amount     bigint      NOT NULL,
    currency   text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE IF EXISTS stripe_checkout_sessions;
