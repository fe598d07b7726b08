-- +goose Up
-- This migration defined in_fields: a word's query held to one field; the search's functions are now
-- defined in R__search_functions.sql, a repeatable migration applied after these.
SELECT 1;

-- +goose Down
SELECT 1;
