-- +goose Up
-- An importer's own reference for a job (issue 46): when a create sends one,
-- it and not the fingerprint decides create or update. It is unique per
-- owner: a space's (space keys, owner_key_id 0) or a platform key's
-- (owner_key_id = the key, whichever space each job is posted into), which
-- ref_space says: the space for a space's jobs, 0 for a platform key's.
-- The fingerprint identifies the jobs without a reference only, so that a
-- platform's two openings that read the same stay two jobs.
ALTER TABLE jobs
    ADD COLUMN external_ref text CONSTRAINT jobs_external_ref_check CHECK (char_length(external_ref) BETWEEN 1 AND 200),
    ADD COLUMN ref_space bigint GENERATED ALWAYS AS (CASE WHEN owner_key_id = 0 THEN space_id ELSE 0 END) STORED;
CREATE UNIQUE INDEX jobs_owner_external_ref_key ON jobs (ref_space, owner_key_id, external_ref) WHERE external_ref IS NOT NULL;
CREATE UNIQUE INDEX jobs_owner_fingerprint_noref_key ON jobs (space_id, owner_key_id, fingerprint) WHERE external_ref IS NULL;
DROP INDEX jobs_owner_fingerprint_key;
ALTER INDEX jobs_owner_fingerprint_noref_key RENAME TO jobs_owner_fingerprint_key;

-- +goose Down
CREATE UNIQUE INDEX jobs_owner_fingerprint_all_key ON jobs (space_id, owner_key_id, fingerprint);
DROP INDEX jobs_owner_fingerprint_key;
ALTER INDEX jobs_owner_fingerprint_all_key RENAME TO jobs_owner_fingerprint_key;
DROP INDEX jobs_owner_external_ref_key;
ALTER TABLE jobs DROP COLUMN ref_space, DROP COLUMN external_ref;
