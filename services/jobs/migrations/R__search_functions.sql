-- The search's functions, as they are today: the statements of
-- stores/jobsearch call them (docs/search.md). A repeatable migration
-- (libs/pg.RepeatablePattern): applied after the versioned ones whenever this
-- file changes, so edit the definitions here. A change CREATE OR REPLACE
-- cannot make (another signature or result type) drops the old function in a
-- versioned migration first. search_doc, which generated columns use, stays
-- in its versioned migration (00003): changing it means recomputing them.

-- The optimal string alignment distance: Levenshtein's, with a swap of two
-- neighbours counted as one edit (barsita is one typo from barista), as
-- Typesense and Meilisearch count typos. fuzzystrmatch has no such function.
CREATE OR REPLACE FUNCTION osa_distance(a text, b text) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT AS $$
DECLARE
    la integer := length(a);
    lb integer := length(b);
    w integer := lb + 1; -- d is a (la+1) x (lb+1) matrix, row-major, 1-based
    d integer[];
    cost integer;
BEGIN
    IF la = 0 OR lb = 0 THEN
        RETURN greatest(la, lb);
    END IF;
    d := array_fill(0, ARRAY[(la + 1) * w]);
    FOR i IN 0 .. la LOOP d[i * w + 1] := i; END LOOP;
    FOR j IN 0 .. lb LOOP d[j + 1] := j; END LOOP;
    FOR i IN 1 .. la LOOP
        FOR j IN 1 .. lb LOOP
            cost := CASE WHEN substr(a, i, 1) = substr(b, j, 1) THEN 0 ELSE 1 END;
            d[i * w + j + 1] := least(d[(i - 1) * w + j + 1] + 1, d[i * w + j] + 1, d[(i - 1) * w + j] + cost);
            IF i > 1 AND j > 1 AND substr(a, i, 1) = substr(b, j - 1, 1) AND substr(a, i - 1, 1) = substr(b, j, 1) THEN
                d[i * w + j + 1] := least(d[i * w + j + 1], d[(i - 2) * w + j - 1] + 1);
            END IF;
        END LOOP;
    END LOOP;
    RETURN d[la * w + lb + 1];
END
$$;

-- The OR of qs, each operand once. A query that is an OR of lexemes is taken
-- apart (a lexeme of the parsers holds no space, &, |, !, < or parenthesis);
-- any other query is one operand as it is. When every q is empty, the first
-- (the empty query, as || of them gives).
CREATE OR REPLACE FUNCTION or_distinct(VARIADIC qs tsquery[]) RETURNS tsquery
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN coalesce((SELECT string_agg(DISTINCT o, ' | ')::tsquery
                     FROM unnest(qs) AS q,
                          unnest(CASE WHEN q::text ~ '[&!<()]' THEN ARRAY['( ' || q::text || ' )']
                                      ELSE string_to_array(q::text, ' | ') END) AS o
                     WHERE numnode(q) > 0), qs[1]);

-- One typed word as queries: exact (simple), its stems in every language (and
-- as a prefix when it is the word being typed), and the known words at most
-- fuzz edits away (typos).
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

-- q restricted to titles (weight A): 'a' | 'b':* becomes 'a':A | 'b':*A.
CREATE OR REPLACE FUNCTION in_title(q tsquery) RETURNS tsquery
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN regexp_replace(replace(q::text, ''':*', ''':*A'), '''((?:[^'']|'''')*)''(?!:)', '''\1'':A', 'g')::tsquery;

-- A word's query held to one field (a tsvector weight: A title, B tags, C
-- company), as in_title holds it to the title: 'x' becomes 'x':W and
-- 'x':* becomes 'x':*W. The rank tests a field with it on the whole vector
-- instead of copying the field out (ts_filter), and the count that keeps a
-- search's plan computes the best score any match has with it (jobsearch's count,
-- docs/search.md "The first page"). The page's own statements get these
-- queries from the Go side (jobsearch.weighted) with the kept plan.
CREATE OR REPLACE FUNCTION in_fields(qs tsquery[], w "char") RETURNS tsquery[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ARRAY(SELECT regexp_replace(replace(q::text, ''':*', ''':*' || w::text), '''((?:[^'']|'''')*)''(?!:)',
                                       '''\1'':' || w::text, 'g')::tsquery
                 FROM unnest(qs) WITH ORDINALITY AS u(q, i) ORDER BY i);

-- A whole q: match finds the rows (every word, every phrase, no excluded
-- word); exact[i], stem[i] and anyq[i] rank the i-th word; phrase[i] checks
-- the i-th phrase's word order, within one field of search_exact;
-- top_exact and top_form hold a row of the best rank any row can have, every
-- word in a title in the best form some title has it (walk false: no such row).
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
