package postbus

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// Invalid posts are rejected before the store is reached, so no store is needed.
func TestUpsertInvalid(t *testing.T) {
	t.Parallel()
	bus := New(nil, nil)
	_, err := bus.Upsert(context.Background(), NewPost{
		Title: " ", Slug: "Not A Slug", Status: "live",
		Authors:    []Author{{Name: "", Username: "Bad User"}},
		Categories: []Term{{Name: "Careers", Slug: "careers"}},
		Tags:       []Term{{Name: "", Slug: "x_y"}},
	})
	var inv *InvalidError
	if !errors.As(err, &inv) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want InvalidError", err)
	}
	want := []string{
		"title must be 1 to 300 characters",
		"slug must be lowercase letters and digits joined by hyphens, at most 200 characters",
		"body must not be empty",
		"status must be draft or published",
		`author "Bad User" needs a name and a lowercase username`,
		`category or tag "x_y" needs a name and a slug`,
	}
	if !slices.Equal(inv.Problems, want) {
		t.Errorf("problems = %q\nwant %q", inv.Problems, want)
	}

	_, err = bus.Upsert(context.Background(), NewPost{Title: "t", Slug: "t", BodyHTML: "<p>x</p>", Status: StatusPublished})
	if !errors.As(err, &inv) || !slices.Equal(inv.Problems, []string{"a published post needs published_at", "a post needs at least one author"}) {
		t.Errorf("err = %v", err)
	}
}

func TestListRejectsOutOfRange(t *testing.T) {
	t.Parallel()
	bus := New(nil, func() time.Time { return time.Unix(0, 0) })
	for _, f := range []Filter{{Limit: 0}, {Limit: MaxLimit + 1}, {Limit: 1, Offset: -1}, {Limit: 1, Offset: MaxOffset + 1}} {
		if _, err := bus.List(context.Background(), f); err == nil {
			t.Errorf("List(%+v) accepted", f)
		}
	}
}

func TestIsSlug(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{"a": true, "a-b-2": true, "": false, "A": false, "a--b": false, "-a": false, "a-": false, "a b": false, "é": false} {
		if IsSlug(s) != want {
			t.Errorf("IsSlug(%q) = %v", s, !want)
		}
	}
}
