-- +goose Up
-- How a job pays and where it is worked (issue 46). sal_min and sal_max are
-- in salary_period; sal_annual is the range's top (sal_max, else sal_min)
-- over a year, for the salary_min filter, which compares annual amounts:
-- 2080 hours (40 a week), 260 days (5 a week), 52 weeks, 12 months
-- (jobbus.PeriodsPerYear; docs/search.md). is_remote stays, for the spec's
-- clients, and is true exactly when workplace_type is remote.
ALTER TABLE jobs
    ADD COLUMN salary_period  text NOT NULL DEFAULT 'year'
        CONSTRAINT jobs_salary_period_check CHECK (salary_period IN ('hour', 'day', 'week', 'month', 'year')),
    ADD COLUMN workplace_type text NOT NULL DEFAULT 'on_site'
        CONSTRAINT jobs_workplace_type_check CHECK (workplace_type IN ('on_site', 'hybrid', 'remote'));
UPDATE jobs SET workplace_type = 'remote' WHERE is_remote;
ALTER TABLE jobs ADD CONSTRAINT jobs_is_remote_workplace_check CHECK (is_remote = (workplace_type = 'remote'));
ALTER TABLE jobs ADD COLUMN sal_annual bigint GENERATED ALWAYS AS (
    coalesce(sal_max, sal_min) * CASE salary_period
        WHEN 'hour' THEN 2080 WHEN 'day' THEN 260 WHEN 'week' THEN 52 WHEN 'month' THEN 12 ELSE 1 END) STORED;
DROP INDEX IF EXISTS jobs_active_salary_idx;
CREATE INDEX jobs_active_salary_idx ON jobs (currency, sal_annual) WHERE status = 'active';

-- +goose Down
DROP INDEX IF EXISTS jobs_active_salary_idx;
CREATE INDEX jobs_active_salary_idx ON jobs (currency, (coalesce(sal_max, sal_min))) WHERE status = 'active';
ALTER TABLE jobs DROP CONSTRAINT jobs_is_remote_workplace_check;
ALTER TABLE jobs DROP COLUMN sal_annual, DROP COLUMN workplace_type, DROP COLUMN salary_period;
