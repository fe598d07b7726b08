// Package seed loads data into the directory schema: the demo set that
// `make run` shows (real cities, realistic spaces, the spaces the gateway's
// demo keys refer to) and large deterministic synthetic sets for benchmarks.
package seed

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/text/unicode/norm"
)

// CityRow is a city to load.
type CityRow struct {
	Name      string
	Slug      string
	Country   string
	Lat, Lon  string // decimal text
	Confirmed bool
}

// SpaceRow is a space to load. ID 0 lets the database choose.
type SpaceRow struct {
	ID        int64
	Name      string
	Slug      string
	Address   string
	Lat, Lon  string // decimal text
	CitySlug  string
	Confirmed bool
	IsPro     bool
	Website   *string
	LinkedIn  *string
}

// Stats counts what a load left in the directory.
type Stats struct {
	Cities, ConfirmedCities, Spaces, ConfirmedSpaces, ProSpaces int
}

func (s Stats) String() string {
	return fmt.Sprintf("cities=%d (confirmed %d) spaces=%d (confirmed %d, pro %d)",
		s.Cities, s.ConfirmedCities, s.Spaces, s.ConfirmedSpaces, s.ProSpaces)
}

// Count reads the directory's totals.
func Count(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (Stats, error) {
	var s Stats
	err := q.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM cities), (SELECT count(*) FROM cities WHERE confirmed),
		(SELECT count(*) FROM spaces), (SELECT count(*) FROM spaces WHERE confirmed),
		(SELECT count(*) FROM spaces WHERE is_pro)`).
		Scan(&s.Cities, &s.ConfirmedCities, &s.Spaces, &s.ConfirmedSpaces, &s.ProSpaces)
	if err != nil {
		return Stats{}, fmt.Errorf("count: %w", err)
	}
	return s, nil
}

// Slugify turns a name into a URL slug: diacritics dropped (ü -> u, ß -> ss,
// ø -> o), lowercase ASCII letters and digits separated by single hyphens.
func Slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range norm.NFD.String(s) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		if rep, ok := slugSpecial[r]; ok {
			b.WriteString(rep)
			dash = false
			continue
		}
		r = unicode.ToLower(r)
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

var slugSpecial = map[rune]string{
	'ß': "ss", 'ẞ': "ss", 'æ': "ae", 'Æ': "ae", 'œ': "oe", 'Œ': "oe", 'ø': "o", 'Ø': "o",
	'ł': "l", 'Ł': "l", 'đ': "d", 'Đ': "d", 'ð': "d", 'Ð': "d", 'þ': "th", 'Þ': "th", 'ı': "i",
	'\'': "", '’': "",
}

func hash32(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return h.Sum32()
}

// offset moves a decimal coordinate by a deterministic amount within ±span
// degrees (derived from h), clamped to ±limit.
func offset(coord string, h uint32, span float64, limit float64) string {
	v, err := strconv.ParseFloat(coord, 64)
	if err != nil {
		return coord
	}
	v += (float64(h%20001)/10000 - 1) * span
	v = max(-limit, min(limit, v))
	return strconv.FormatFloat(v, 'f', 6, 64)
}

func ptr(s string) *string { return &s }

// lockSeed serialises seed runs on one database.
func lockSeed(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('directory.seed'))`); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	return nil
}

// inTx runs fn in one transaction holding the seed lock.
func inTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := lockSeed(ctx, tx); err != nil {
			return err
		}
		return fn(tx)
	})
}
