-- +goose Up
-- A word's query held to one field (a tsvector weight: A title, B tags, C
-- company), as in_title (00006) holds it to the title: 'x' becomes 'x':W and
-- 'x':* becomes 'x':*W. The rank tests a field with it on the whole vector
-- instead of copying the field out (ts_filter), and the count that keeps a
-- search's plan computes the best score any match has with it (jobdb.Count,
-- docs/search.md "The first page"). The page's own statements get these
-- queries from the Go side (jobdb.weighted) with the kept plan.
CREATE FUNCTION in_fields(qs tsquery[], w "char") RETURNS tsquery[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ARRAY(SELECT regexp_replace(replace(q::text, ''':*', ''':*' || w::text), '''((?:[^'']|'''')*)''(?!:)',
                                       '''\1'':' || w::text, 'g')::tsquery
                 FROM unnest(qs) WITH ORDINALITY AS u(q, i) ORDER BY i);

-- +goose Down
DROP FUNCTION in_fields(tsquery[], "char");
