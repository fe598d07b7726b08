-- +goose Up
-- What every create wrote and nothing reads any more: search_text (the
-- substring search's column, replaced by search_vector in 00003) and the
-- unique index on hash_identifier, whose uniqueness jobs_hash_digest_key
-- (00002) already enforces (the digest is of the hash, escaped one-to-one)
-- and by which the edit links are found (make bench row d).
DROP INDEX IF EXISTS jobs_hash_identifier_key;
ALTER TABLE jobs DROP COLUMN IF EXISTS search_text;

-- +goose Down
ALTER TABLE jobs ADD COLUMN search_text text GENERATED ALWAYS AS (lower(title || ' ' || company || ' ' || tags)) STORED;
CREATE UNIQUE INDEX jobs_hash_identifier_key ON jobs (hash_identifier);
