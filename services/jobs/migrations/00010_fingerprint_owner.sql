-- +goose Up
-- A fingerprint identifies a duplicate among one owner's jobs only
-- (docs/job-lifecycle.md, "Who owns a job"): a space for the jobs its keys
-- post (owner_key_id 0), the posting key for a key without a space
-- (owner_key_id = key_id). Before, every key without a space shared space 0's
-- fingerprints, and a trusted importer posting into a space shared the
-- space's: a match handed one poster's job to another.
ALTER TABLE jobs ADD COLUMN owner_key_id bigint NOT NULL DEFAULT 0;

-- Jobs of no space were posted by a key without a space. A job an importer
-- posted into a space cannot be told from the space's own here: it stays in
-- the space's namespace (the importer's next post of it creates its own).
UPDATE jobs SET owner_key_id = key_id WHERE space_id = 0 AND key_id <> 0;

CREATE UNIQUE INDEX jobs_owner_fingerprint_key ON jobs (space_id, owner_key_id, fingerprint);
DROP INDEX jobs_fingerprint_key;

-- +goose Down
CREATE UNIQUE INDEX jobs_fingerprint_key ON jobs (space_id, fingerprint);
DROP INDEX jobs_owner_fingerprint_key;
ALTER TABLE jobs DROP COLUMN owner_key_id;
