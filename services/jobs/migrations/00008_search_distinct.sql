-- +goose Up
-- A word's queries without repeats. Its seven stems are mostly one lexeme
-- (community stems to community in six languages), and with the word itself,
-- its prefix and its typos a word's OR held the same lexeme up to ten times.
-- Every repeat is evaluated again for each row and each index item
-- (docs/search.md; make bench row b2).

-- This migration defined or_distinct, and term_queries and search_plan without repeated operands; the search's functions are now
-- defined in R__search_functions.sql, a repeatable migration applied after these.
SELECT 1;

-- +goose Down
SELECT 1;
