-- +goose Up
-- Job alert digests (issue 36): a daily or weekly alert's matches wait
-- (alert_matches.sent_at NULL) for its local morning; the digest clock
-- (alertmail.DigestClockWorkflow) takes the alerts due, marks their visible
-- pairs sent and queues one digest mail in alert_outbox, in one statement.

-- When the alert's next digest is due: 08:00 in its time zone, every day
-- (daily) or on Mondays (weekly). NULL until the clock's next tick computes
-- it (a confirmation, a frequency change or a resume resets it).
ALTER TABLE alerts ADD COLUMN next_digest_at timestamptz;
CREATE INDEX alerts_next_digest_idx ON alerts (next_digest_at)
    WHERE confirmed_at IS NOT NULL AND NOT paused AND frequency IN ('daily', 'weekly');

-- A digest mail names its alert and the time its pairs were marked sent
-- (alert_matches.sent_at = digest_at): the mail lists those pairs.
ALTER TABLE alert_outbox DROP CONSTRAINT alert_outbox_kind_check;
ALTER TABLE alert_outbox ADD CONSTRAINT alert_outbox_kind_check CHECK (kind IN ('confirm', 'match', 'digest'));
ALTER TABLE alert_outbox ADD COLUMN digest_at timestamptz NOT NULL DEFAULT 'epoch';

-- alert_next_digest is the first local 08:00 (a Monday's for weekly) strictly
-- after after, in zone tz; NULL for instant alerts. 08:00 exists on every
-- day of every zone (DST moves happen at night). A zone PostgreSQL does
-- not know (its tz database older than Go's) counts as UTC rather than
-- failing the whole tick.
-- +goose StatementBegin
CREATE FUNCTION alert_next_digest(frequency text, tz text, after timestamptz) RETURNS timestamptz
LANGUAGE plpgsql STABLE AS $$
DECLARE
    local timestamp;
    cand  timestamp;
BEGIN
    BEGIN
        local := after AT TIME ZONE tz;
    EXCEPTION WHEN invalid_parameter_value THEN
        tz := 'UTC';
        local := after AT TIME ZONE tz;
    END;
    IF frequency = 'daily' THEN
        cand := date_trunc('day', local) + interval '8 hours';
        IF cand <= local THEN cand := cand + interval '1 day'; END IF;
    ELSIF frequency = 'weekly' THEN
        cand := date_trunc('week', local) + interval '8 hours'; -- ISO weeks start on Monday
        IF cand <= local THEN cand := cand + interval '7 days'; END IF;
    ELSE
        RETURN NULL;
    END IF;
    RETURN cand AT TIME ZONE tz;
END $$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS alert_next_digest(text, text, timestamptz);
DELETE FROM alert_outbox WHERE kind = 'digest';
ALTER TABLE alert_outbox DROP COLUMN IF EXISTS digest_at;
ALTER TABLE alert_outbox DROP CONSTRAINT alert_outbox_kind_check;
ALTER TABLE alert_outbox ADD CONSTRAINT alert_outbox_kind_check CHECK (kind IN ('confirm', 'match'));
DROP INDEX IF EXISTS alerts_next_digest_idx;
ALTER TABLE alerts DROP COLUMN IF EXISTS next_digest_at;
