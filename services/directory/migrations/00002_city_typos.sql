-- +goose Up
-- Typo-tolerant city search (GET /v2/cities?search=): fuzzystrmatch's
-- Levenshtein distance, bounded, over the folded names of confirmed cities.
-- It ships with PostgreSQL (contrib); the jobs schema uses it too, so neither
-- schema drops it.
CREATE EXTENSION IF NOT EXISTS fuzzystrmatch WITH SCHEMA public;

-- +goose Down
SELECT 1;
