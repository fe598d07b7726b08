-- +goose Up
-- The content schema: blog posts with their authors, categories and tags.

CREATE TABLE authors (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    username   text NOT NULL UNIQUE CHECK (username ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE categories (
    id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    slug text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$' AND length(slug) <= 100)
);
-- The category filter matches the slug or, case-insensitively, the name.
CREATE INDEX categories_lower_name_idx ON categories (lower(name));

CREATE TABLE tags (
    id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    slug text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$' AND length(slug) <= 100)
);
CREATE INDEX tags_lower_name_idx ON tags (lower(name));

CREATE TABLE posts (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    title        text NOT NULL CHECK (length(title) BETWEEN 1 AND 300),
    slug         text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$' AND length(slug) <= 200),
    -- body_html is stored as written; it is sanitised every time it is served.
    body_html    text NOT NULL,
    excerpt      text NOT NULL DEFAULT '',
    -- reading_time (minutes) is derived from body_html whenever the post is written.
    reading_time integer NOT NULL CHECK (reading_time >= 1),
    status       text NOT NULL CHECK (status IN ('draft', 'published')),
    published_at timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT posts_published_has_date CHECK (status = 'draft' OR published_at IS NOT NULL)
);
-- The list and the feed read published posts newest first with id as the tie-break.
CREATE INDEX posts_published_idx ON posts (published_at DESC, id DESC) WHERE status = 'published';

CREATE TABLE post_authors (
    post_id   bigint NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
    author_id bigint NOT NULL REFERENCES authors (id) ON DELETE RESTRICT,
    position  smallint NOT NULL DEFAULT 0,
    PRIMARY KEY (post_id, author_id)
);
CREATE INDEX post_authors_author_idx ON post_authors (author_id);

CREATE TABLE post_categories (
    post_id     bigint NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
    category_id bigint NOT NULL REFERENCES categories (id) ON DELETE RESTRICT,
    PRIMARY KEY (post_id, category_id)
);
-- Filtering by category walks from the category to its posts.
CREATE INDEX post_categories_category_idx ON post_categories (category_id, post_id);

CREATE TABLE post_tags (
    post_id bigint NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
    tag_id  bigint NOT NULL REFERENCES tags (id) ON DELETE RESTRICT,
    PRIMARY KEY (post_id, tag_id)
);
CREATE INDEX post_tags_tag_idx ON post_tags (tag_id, post_id);

-- +goose Down
DROP TABLE IF EXISTS post_tags;
DROP TABLE IF EXISTS post_categories;
DROP TABLE IF EXISTS post_authors;
DROP TABLE IF EXISTS posts;
DROP TABLE IF EXISTS tags;
DROP TABLE IF EXISTS categories;
DROP TABLE IF EXISTS authors;
