package postdb_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus/stores/postdb"
	"github.com/coworkjobs/coworkjobs/services/content/internal/seed/blogseed"
	"github.com/coworkjobs/coworkjobs/services/content/migrations"
)

// With DATABASE_READ_URL the blog's reads (list and one post: the pages and
// the feed) are answered by the replica, and by the primary once it stops.
func TestReadsGoToTheReplica(t *testing.T) {
	now := time.Now()
	later, f := now.Add(time.Hour), postbus.Filter{Limit: 50}
	var slug string
	pgtest.CheckRoutedReads(t, "content", migrations.FS,
		func(ctx context.Context, primary *pgxpool.Pool) (int, error) {
			if err := blogseed.Load(ctx, postbus.New(postdb.New(primary), nil), blogseed.Demo(now)); err != nil {
				return 0, err
			}
			listed, published, err := postdb.New(primary).List(ctx, later, f)
			if err == nil && len(listed) > 0 {
				slug = listed[0].Slug
			}
			return published, err
		},
		func(ctx context.Context, primary *pgxpool.Pool, reads *pg.Reads) (int, error) {
			routed := postdb.New(primary).WithReads(reads)
			_, n, err := routed.List(ctx, later, f)
			if err != nil {
				return 0, err
			}
			_, err = routed.BySlug(ctx, later, slug)
			if notFound := errors.Is(err, postbus.ErrNotFound); err != nil && !notFound || notFound != (n == 0) {
				return 0, errors.Join(fmt.Errorf("post %s read beside a list of %d posts", slug, n), err)
			}
			return n, nil
		})
}
