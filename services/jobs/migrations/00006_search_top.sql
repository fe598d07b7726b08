-- +goose Up
-- The first page of a common term without ranking every match (docs/search.md,
-- "The first page"): top finds the rows whose every word is in the title as
-- typed (the best score a row can have); the newest of them, found by walking
-- jobs_active_recent_idx, are the page when there are enough of them.

DROP FUNCTION search_plan(text[], boolean[], integer[], text[], text[]);

-- +goose StatementBegin
CREATE FUNCTION search_plan(words text[], prefix boolean[], fuzz integer[], phrases text[], excluded text[],
                            OUT match tsquery, OUT exact tsquery[], OUT stem tsquery[], OUT anyq tsquery[],
                            OUT phrase tsquery[], OUT top tsquery)
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
        -- The word as typed, in the title (weight A of search_exact). A word
        -- without a lexeme makes top NULL: then no row is a top row.
        one := CASE WHEN numnode(q.exact) = 0 THEN NULL
                    ELSE regexp_replace(q.exact::text, '''((?:[^'']|'''')*)''', '''\1'':A', 'g')::tsquery END;
        top := CASE WHEN i = 1 THEN one ELSE top && one END;
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
