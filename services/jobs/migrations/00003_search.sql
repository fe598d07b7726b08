-- +goose Up
-- Search that finds what people type (docs/search.md): words in any order,
-- stems in the board's languages, accents and case ignored, the last word as a
-- prefix, typos forgiven, phrases and exclusions, ranked.

-- Extensions are database-wide and the directory creates fuzzystrmatch too:
-- IF NOT EXISTS does not wait for another schema's migration creating it at
-- the same time, so creating one takes a lock every service's migration takes.
SELECT pg_advisory_xact_lock(hashtext('coworkjobs: create extension'));
CREATE EXTENSION IF NOT EXISTS unaccent WITH SCHEMA public;
CREATE EXTENSION IF NOT EXISTS fuzzystrmatch WITH SCHEMA public;

-- unaccent() is STABLE (its dictionary could change); the dictionary is named
-- here, so this call is as immutable as an index needs.
CREATE FUNCTION f_unaccent(t text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN public.unaccent('public.unaccent'::regdictionary, t);

-- One configuration per language, each folding accents before stemming
-- (Zürich and zurich are one word), and simple_u for exact words.
CREATE TEXT SEARCH CONFIGURATION simple_u (COPY = pg_catalog.simple);
ALTER TEXT SEARCH CONFIGURATION simple_u ALTER MAPPING FOR hword, hword_part, word WITH public.unaccent, simple;
CREATE TEXT SEARCH CONFIGURATION english_u (COPY = pg_catalog.english);
ALTER TEXT SEARCH CONFIGURATION english_u ALTER MAPPING FOR hword, hword_part, word WITH public.unaccent, english_stem;
CREATE TEXT SEARCH CONFIGURATION german_u (COPY = pg_catalog.german);
ALTER TEXT SEARCH CONFIGURATION german_u ALTER MAPPING FOR hword, hword_part, word WITH public.unaccent, german_stem;
CREATE TEXT SEARCH CONFIGURATION french_u (COPY = pg_catalog.french);
ALTER TEXT SEARCH CONFIGURATION french_u ALTER MAPPING FOR hword, hword_part, word WITH public.unaccent, french_stem;
CREATE TEXT SEARCH CONFIGURATION spanish_u (COPY = pg_catalog.spanish);
ALTER TEXT SEARCH CONFIGURATION spanish_u ALTER MAPPING FOR hword, hword_part, word WITH public.unaccent, spanish_stem;
CREATE TEXT SEARCH CONFIGURATION italian_u (COPY = pg_catalog.italian);
ALTER TEXT SEARCH CONFIGURATION italian_u ALTER MAPPING FOR hword, hword_part, word WITH public.unaccent, italian_stem;
CREATE TEXT SEARCH CONFIGURATION portuguese_u (COPY = pg_catalog.portuguese);
ALTER TEXT SEARCH CONFIGURATION portuguese_u ALTER MAPPING FOR hword, hword_part, word WITH public.unaccent, portuguese_stem;
CREATE TEXT SEARCH CONFIGURATION dutch_u (COPY = pg_catalog.dutch);
ALTER TEXT SEARCH CONFIGURATION dutch_u ALTER MAPPING FOR hword, hword_part, word WITH public.unaccent, dutch_stem;

-- Every form of a text: its exact words and their stems in each language.
-- (A SQL-standard body binds the configurations when it is created.)
CREATE FUNCTION search_doc(t text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN to_tsvector('simple_u', t) || to_tsvector('english_u', t) || to_tsvector('german_u', t)
        || to_tsvector('french_u', t) || to_tsvector('spanish_u', t) || to_tsvector('italian_u', t)
        || to_tsvector('portuguese_u', t) || to_tsvector('dutch_u', t);

-- Weights say where a word is: A title, B tags, C company. search_vector
-- finds (every form); search_exact ranks exact words first and holds the
-- positions phrases need.
ALTER TABLE jobs
    ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
        setweight(search_doc(title), 'A') || setweight(search_doc(replace(tags, ',', ' ')), 'B')
        || setweight(search_doc(company), 'C')) STORED,
    ADD COLUMN search_exact tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('simple_u', title), 'A') || setweight(to_tsvector('simple_u', replace(tags, ',', ' ')), 'B')
        || setweight(to_tsvector('simple_u', company), 'C')) STORED;

CREATE INDEX jobs_active_search_idx ON jobs USING gin (search_vector) WHERE status = 'active';
-- The substring search it replaces.
DROP INDEX IF EXISTS jobs_active_search_trgm_idx;

-- Discovery filters: an exact tag, a salary reaching a minimum (in one currency).
ALTER TABLE jobs ADD COLUMN tag_list text[] GENERATED ALWAYS AS (string_to_array(tags, ',')) STORED;
CREATE INDEX jobs_active_tags_idx ON jobs USING gin (tag_list) WHERE status = 'active';
CREATE INDEX jobs_active_salary_idx ON jobs (currency, (coalesce(sal_max, sal_min))) WHERE status = 'active';

-- The words of every job, for typo tolerance: a typed word is compared
-- with these (trigram index, then Levenshtein distance), never with rows.
CREATE TABLE search_words (word text PRIMARY KEY);

-- +goose StatementBegin
DO $$
DECLARE ext_schema text;
BEGIN
    SELECT n.nspname INTO ext_schema
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'pg_trgm';
    EXECUTE format('CREATE INDEX search_words_trgm_idx ON search_words USING gin (word %I.gin_trgm_ops)', ext_schema);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION collect_search_words() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    -- Sorted, so that two writers of the same new words never deadlock.
    INSERT INTO search_words (word)
    SELECT DISTINCT w FROM regexp_split_to_table(
        lower(f_unaccent(NEW.title || ' ' || NEW.tags || ' ' || NEW.company)), '[^[:alnum:]]+') AS w
    WHERE length(w) >= 4 ORDER BY w
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER jobs_search_words AFTER INSERT OR UPDATE OF title, tags, company ON jobs
    FOR EACH ROW EXECUTE FUNCTION collect_search_words();

INSERT INTO search_words (word)
SELECT DISTINCT w FROM jobs, regexp_split_to_table(lower(f_unaccent(title || ' ' || tags || ' ' || company)), '[^[:alnum:]]+') AS w
WHERE length(w) >= 4
ON CONFLICT DO NOTHING;

-- This migration defined osa_distance, term_queries and search_plan; the search's functions are now
-- defined in R__search_functions.sql, a repeatable migration applied after these.

-- +goose Down
DROP FUNCTION IF EXISTS search_plan(text[], boolean[], integer[], text[], text[]);
DROP FUNCTION IF EXISTS term_queries(text, boolean, integer);
DROP FUNCTION IF EXISTS osa_distance(text, text);
DROP TRIGGER IF EXISTS jobs_search_words ON jobs;
DROP FUNCTION IF EXISTS collect_search_words();
DROP TABLE IF EXISTS search_words;
DROP INDEX IF EXISTS jobs_active_search_idx;
DROP INDEX IF EXISTS jobs_active_salary_idx;
DROP INDEX IF EXISTS jobs_active_tags_idx;
ALTER TABLE jobs DROP COLUMN IF EXISTS tag_list;
ALTER TABLE jobs DROP COLUMN IF EXISTS search_exact, DROP COLUMN IF EXISTS search_vector;
DROP FUNCTION IF EXISTS search_doc(text);
DROP TEXT SEARCH CONFIGURATION IF EXISTS simple_u, english_u, german_u, french_u, spanish_u, italian_u, portuguese_u, dutch_u;
DROP FUNCTION IF EXISTS f_unaccent(text);
