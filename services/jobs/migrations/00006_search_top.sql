-- +goose Up
-- The first page of a common term without ranking every match (docs/search.md,
-- "The first page"): search_plan's top finds the rows of the best score any
-- row can have: every word in the title, as typed where some title has it so,
-- else by a stem or the prefix where some title has that, else with its
-- typos. The newest of them, found by walking jobs_active_recent_idx, are the
-- page when there are enough of them.

-- Every lexeme (every form) any title ever had: which forms no title has is
-- a look-up here, not a scan of the jobs. It only grows, so it may list a
-- form no active title has any more, never the other way round.
CREATE TABLE title_lexemes (
    lexeme text PRIMARY KEY,
    v      tsvector GENERATED ALWAYS AS (array_to_tsvector(ARRAY[lexeme])) STORED
);
CREATE INDEX title_lexemes_v_idx ON title_lexemes USING gin (v);

-- +goose StatementBegin
CREATE FUNCTION collect_title_lexemes() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    -- Sorted, so that two writers of the same new lexemes never deadlock.
    INSERT INTO title_lexemes (lexeme)
    SELECT l FROM unnest(tsvector_to_array(ts_filter(NEW.search_vector, '{a}'))) AS l ORDER BY l
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER jobs_title_lexemes AFTER INSERT OR UPDATE OF title ON jobs
    FOR EACH ROW EXECUTE FUNCTION collect_title_lexemes();

INSERT INTO title_lexemes (lexeme)
SELECT DISTINCT l FROM jobs, unnest(tsvector_to_array(ts_filter(search_vector, '{a}'))) AS l
ON CONFLICT DO NOTHING;

-- This migration defined in_title and a new search_plan (with top_exact, top_form and walk); the search's functions are now
-- defined in R__search_functions.sql, a repeatable migration applied after these.
DROP FUNCTION IF EXISTS search_plan(text[], boolean[], integer[], text[], text[]);

-- +goose Down
DROP FUNCTION IF EXISTS search_plan(text[], boolean[], integer[], text[], text[]);
DROP FUNCTION IF EXISTS in_title(tsquery);
DROP TRIGGER IF EXISTS jobs_title_lexemes ON jobs;
DROP FUNCTION IF EXISTS collect_title_lexemes();
DROP TABLE IF EXISTS title_lexemes;
