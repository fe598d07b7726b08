-- +goose Up
-- Typo-tolerant city search (GET /v2/cities?search=): fuzzystrmatch's
-- Levenshtein distance, bounded, over the folded names of confirmed cities.
-- It ships with PostgreSQL (contrib); the jobs schema uses it too, so neither
-- schema drops it. Extensions are database-wide: two schemas migrating at
-- once would both try to create it (IF NOT EXISTS does not wait for the
-- other), so creating one takes the lock every service's migration takes.
SELECT pg_advisory_xact_lock(hashtext('coworkjobs: create extension'));
CREATE EXTENSION IF NOT EXISTS fuzzystrmatch WITH SCHEMA public;

-- +goose Down
SELECT 1;
