-- +goose Up
-- A word's queries without repeats. Its seven stems are mostly one lexeme
-- (community stems to community in six languages), and with the word itself,
-- its prefix and its typos a word's OR held the same lexeme up to ten times.
-- Every repeat is evaluated again for each row and each index item: at 1 M
-- jobs "st. oberholz 294" took 3.5 ms of GIN scan with the repeats and 0.8 ms
-- without (docs/search.md).

-- The OR of qs, each operand once. A query that is an OR of lexemes is taken
-- apart (a lexeme of the parsers holds no space, &, |, !, < or parenthesis);
-- any other query is one operand as it is. When every q is empty, the first
-- (the empty query, as || of them gives).
CREATE FUNCTION or_distinct(VARIADIC qs tsquery[]) RETURNS tsquery
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN coalesce((SELECT string_agg(DISTINCT o, ' | ')::tsquery
                     FROM unnest(qs) AS q,
                          unnest(CASE WHEN q::text ~ '[&!<()]' THEN ARRAY['( ' || q::text || ' )']
                                      ELSE string_to_array(q::text, ' | ') END) AS o
                     WHERE numnode(q) > 0), qs[1]);

-- +goose StatementBegin
-- (A stop word has no stem: its empty query would raise a NOTICE per call.)
CREATE OR REPLACE FUNCTION term_queries(w text, prefix boolean, fuzz integer,
                             OUT exact tsquery, OUT stem tsquery, OUT typo tsquery)
    LANGUAGE plpgsql STABLE PARALLEL SAFE SET client_min_messages = warning AS $$
DECLARE
    folded text := lower(f_unaccent(w));
BEGIN
    exact := plainto_tsquery('simple_u', w);
    stem := or_distinct(plainto_tsquery('english_u', w), plainto_tsquery('german_u', w), plainto_tsquery('french_u', w),
        plainto_tsquery('spanish_u', w), plainto_tsquery('italian_u', w), plainto_tsquery('portuguese_u', w),
        plainto_tsquery('dutch_u', w));
    IF prefix THEN
        stem := or_distinct(to_tsquery('simple_u', quote_literal(folded) || ':*'), stem);
    END IF;
    typo := exact; -- no typo: the exact word again, which changes nothing
    IF fuzz > 0 THEN
        SELECT coalesce(to_tsquery('simple_u', string_agg(quote_literal(c.word), ' | ')), exact) INTO typo
        FROM (SELECT word FROM (SELECT word, osa_distance(word, folded) AS edits FROM search_words
                                 WHERE word OPERATOR(public.%) folded
                                   -- a swap is two Levenshtein edits
                                   AND public.levenshtein_less_equal(word, folded, 2 * fuzz) <= 2 * fuzz) w
              WHERE edits BETWEEN 1 AND fuzz
              ORDER BY edits, word LIMIT 8) c;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION search_plan(words text[], prefix boolean[], fuzz integer[], phrases text[], excluded text[],
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
        one := or_distinct(q.exact, q.stem, q.typo);
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
        one := !! or_distinct(q.exact, q.stem);
        match := CASE WHEN match IS NULL THEN one ELSE match && one END;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
-- (A stop word has no stem: its empty query would raise a NOTICE per call.)
CREATE OR REPLACE FUNCTION term_queries(w text, prefix boolean, fuzz integer,
                             OUT exact tsquery, OUT stem tsquery, OUT typo tsquery)
    LANGUAGE plpgsql STABLE PARALLEL SAFE SET client_min_messages = warning AS $$
DECLARE
    folded text := lower(f_unaccent(w));
BEGIN
    exact := plainto_tsquery('simple_u', w);
    stem := plainto_tsquery('english_u', w) || plainto_tsquery('german_u', w) || plainto_tsquery('french_u', w)
        || plainto_tsquery('spanish_u', w) || plainto_tsquery('italian_u', w) || plainto_tsquery('portuguese_u', w)
        || plainto_tsquery('dutch_u', w);
    IF prefix THEN
        stem := to_tsquery('simple_u', quote_literal(folded) || ':*') || stem;
    END IF;
    typo := exact; -- no typo: the exact word again, which changes nothing
    IF fuzz > 0 THEN
        SELECT coalesce(to_tsquery('simple_u', string_agg(quote_literal(c.word), ' | ')), exact) INTO typo
        FROM (SELECT word FROM (SELECT word, osa_distance(word, folded) AS edits FROM search_words
                                 WHERE word OPERATOR(public.%) folded
                                   -- a swap is two Levenshtein edits
                                   AND public.levenshtein_less_equal(word, folded, 2 * fuzz) <= 2 * fuzz) w
              WHERE edits BETWEEN 1 AND fuzz
              ORDER BY edits, word LIMIT 8) c;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION search_plan(words text[], prefix boolean[], fuzz integer[], phrases text[], excluded text[],
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

DROP FUNCTION IF EXISTS or_distinct(tsquery[]);
