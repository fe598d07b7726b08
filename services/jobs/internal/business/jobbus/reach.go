package jobbus

import (
	"context"
	"time"
)

// SitemapPartSize is the most URLs a sitemap part lists (the sitemap
// protocol's limit). Part n lists the active jobs whose id is in
// ((n-1)*size, n*size]: a job stays in its part for good, and no part needs
// an offset to find.
const SitemapPartSize = 50000

// ActiveWalk selects the next batch of active jobs in id order: those after
// AfterID, up to UpTo (0: no end), of Plans (empty: any) and of SpaceID (0:
// any space), Limit of them.
type ActiveWalk struct {
	AfterID, UpTo int64
	Plans         []int
	SpaceID       int64
	Limit         int
}

// SitemapPart is one part of the sitemap with when its jobs last changed.
type SitemapPart struct {
	N        int64
	Modified time.Time
}

// Active returns the next batch of w: a public read. Each job carries what
// its public page shows (never its poster's e-mail or hash to a renderer
// that does not ask for them).
func (b *Business) Active(ctx context.Context, w ActiveWalk) ([]Detail, error) {
	return b.store.Lists.Active(ctx, w)
}

// SitemapParts lists the parts of size that hold active jobs.
func (b *Business) SitemapParts(ctx context.Context, size int64) ([]SitemapPart, error) {
	return b.store.Lists.SitemapParts(ctx, size)
}

// Changed is when the public set of jobs last changed: a validator of
// every public listing (feeds, sitemaps, the embed).
func (b *Business) Changed(ctx context.Context) (time.Time, error) { return b.store.Lists.Changed(ctx) }
