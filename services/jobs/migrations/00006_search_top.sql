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

-- q restricted to titles (weight A): 'a' | 'b':* becomes 'a':A | 'b':*A.
-- +goose StatementBegin
CREATE FUNCTION in_title(q tsquery) RETURNS tsquery
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN regexp_replace(replace(q::text, ''':*', ''':*A'), '''((?:[^'']|'''')*)''(?!:)', '''\1'':A', 'g')::tsquery;
-- +goose StatementEnd

DROP FUNCTION search_plan(text[], boolean[], integer[], text[], text[]);

-- +goose StatementBegin
CREATE FUNCTION search_plan(words text[], prefix boolean[], fuzz integer[], phrases text[], excluded text[],
                            OUT match tsquery, OUT exact tsquery[], OUT stem tsquery[], OUT anyq tsquery[],
                            OUT phrase tsquery[], OUT top_exact tsquery, OUT top_form tsquery, OUT walk boolean)
    LANGUAGE plpgsql STABLE PARALLEL SAFE SET client_min_messages = warning AS $$
DECLARE
    q record;
    p text;
    one tsquery;
BEGIN
    exact := '{}'; stem := '{}'; anyq := '{}'; phrase := '{}'; walk := true;
    FOR i IN 1 .. coalesce(array_length(words, 1), 0) LOOP
        SELECT * INTO q FROM term_queries(words[i], prefix[i], fuzz[i]);
        one := q.exact || q.stem || q.typo;
        exact := array_append(exact, q.exact);
        stem := array_append(stem, q.stem);
        anyq := array_append(anyq, one);
        match := CASE WHEN match IS NULL THEN one ELSE match && one END;
        -- The word's best form in any title. As typed: search_exact has it
        -- (top_exact); by a stem or the prefix, or with a typo, when no title
        -- has a better form: search_vector has it (top_form). A word without
        -- a lexeme leaves no top row (walk false).
        IF numnode(q.exact) = 0 THEN
            walk := false;
        ELSIF EXISTS (SELECT 1 FROM title_lexemes WHERE v @@ q.exact) THEN
            top_exact := CASE WHEN top_exact IS NULL THEN in_title(q.exact) ELSE top_exact && in_title(q.exact) END;
        ELSIF EXISTS (SELECT 1 FROM title_lexemes WHERE v @@ q.stem) THEN
            top_form := CASE WHEN top_form IS NULL THEN in_title(q.stem) ELSE top_form && in_title(q.stem) END;
        ELSE
            top_form := CASE WHEN top_form IS NULL THEN in_title(q.typo) ELSE top_form && in_title(q.typo) END;
        END IF;
    END LOOP;
    FOREACH p IN ARRAY coalesce(phrases, '{}') LOOP
        one := plainto_tsquery('simple_u', p);
        match := CASE WHEN match IS NULL THEN one ELSE match && one END;
        phrase := array_append(phrase, phraseto_tsquery('simple_u', p));
    END LOOP;
    FOREACH p IN ARRAY coalesce(excluded, '{}') LOOP
        SELECT * INTO q FROM term_queries(p, false, 0);
        one := !! (q.exact || q.stem);
        match := CASE WHEN match IS NULL THEN one ELSE match && one END;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS search_plan(text[], boolean[], integer[], text[], text[]);
DROP FUNCTION IF EXISTS in_title(tsquery);
DROP TRIGGER IF EXISTS jobs_title_lexemes ON jobs;
DROP FUNCTION IF EXISTS collect_title_lexemes();
DROP TABLE IF EXISTS title_lexemes;
-- +goose StatementBegin
CREATE FUNCTION search_plan(words text[], prefix boolean[], fuzz integer[], phrases text[], excluded text[],
                            OUT match tsquery, OUT exact tsquery[], OUT stem tsquery[], OUT anyq tsquery[],
                            OUT phrase tsquery[])
    LANGUAGE plpgsql STABLE PARALLEL SAFE SET client_min_messages = warning AS $$
DECLARE
    q record;
    p text;
    one tsquery;
BEGIN
    exact := '{}'; stem := '{}'; anyq := '{}'; phrase := '{}';
    FOR i IN 1 .. coalesce(array_length(words, 1), 0) LOOP
        SELECT * INTO q FROM term_queries(words[i], prefix[i], fuzz[i]);
        one := q.exact || q.stem || q.typo;
        exact := array_append(exact, q.exact);
        stem := array_append(stem, q.stem);
        anyq := array_append(anyq, one);
        match := CASE WHEN match IS NULL THEN one ELSE match && one END;
    END LOOP;
    FOREACH p IN ARRAY coalesce(phrases, '{}') LOOP
        one := plainto_tsquery('simple_u', p);
        match := CASE WHEN match IS NULL THEN one ELSE match && one END;
        phrase := array_append(phrase, phraseto_tsquery('simple_u', p));
    END LOOP;
    FOREACH p IN ARRAY coalesce(excluded, '{}') LOOP
        SELECT * INTO q FROM term_queries(p, false, 0);
        one := !! (q.exact || q.stem);
        match := CASE WHEN match IS NULL THEN one ELSE match && one END;
    END LOOP;
END
$$;
-- +goose StatementEnd
