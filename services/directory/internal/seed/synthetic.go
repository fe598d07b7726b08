package seed

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SyntheticPrefix starts the slug of every synthetic row, so that a new
// synthetic set replaces the previous one and leaves the demo set alone.
const SyntheticPrefix = "syn-"

// SyntheticOptions size a synthetic data set.
type SyntheticOptions struct {
	Cities int
	Spaces int
	Seed   uint64
	// Reset empties the whole directory (demo rows included) and restarts the
	// id sequences first, so that the ids are deterministic too.
	Reset bool
}

// Validate checks the sizes.
func (o SyntheticOptions) Validate() error {
	var errs []error
	if o.Cities < 1 || o.Cities > 1_000_000 {
		errs = append(errs, errors.New("cities must be between 1 and 1000000"))
	}
	if o.Spaces < 0 || o.Spaces > 10_000_000 {
		errs = append(errs, errors.New("spaces must be between 0 and 10000000"))
	}
	return errors.Join(errs...)
}

var (
	syllables = []string{"ber", "lin", "mar", "sel", "ka", "to", "ri", "zu", "ach", "vel", "mo", "ra", "du", "nes",
		"por", "ta", "sa", "lo", "vi", "en", "gra", "do", "fel", "heim", "burg", "sta", "no", "li", "qui", "bre",
		"an", "co", "ver", "dal", "mi", "sto", "lu", "ga", "tor", "ne"}
	cityPrefixes = []string{"San", "Nova", "Bad", "Port", "Saint", "Nieuw", "Santa", "Alt"}
	accents      = map[byte][]string{'a': {"á", "ä", "ã", "å"}, 'e': {"é", "è", "ë"}, 'o': {"ó", "ö", "ø"}, 'u': {"ü", "ú"}, 'i': {"í"}}
	countries    = []string{"DE", "PT", "FR", "ES", "IT", "NL", "BE", "CH", "AT", "PL", "CZ", "DK", "SE", "NO", "GB", "IE", "US", "CA", "BR", "MX"}
	spaceWords   = []string{"Harbour", "Atelier", "Foundry", "Meridian", "Canopy", "Orbit", "Lantern", "Quarry", "Beacon",
		"Juniper", "Cobalt", "Granary", "Terrace", "Compass", "Mosaic", "Riverside", "Summit", "Workshop", "Cedar", "Pavilion"}
	streetWords = []string{"Market", "Station", "Church", "Mill", "Garden", "Harbour", "Park", "Bridge", "Castle", "River"}
	streetKinds = []string{"Street", "Road", "Lane", "Avenue", "Square"}
)

// Synthetic generates a data set from opts.Seed alone: the same options give
// the same rows, byte for byte.
func Synthetic(opts SyntheticOptions) ([]CityRow, []SpaceRow) {
	rng := rand.New(rand.NewPCG(opts.Seed, 0x636f776f726b)) // "cowork"
	cities := make([]CityRow, opts.Cities)
	for i := range cities {
		name := syntheticCityName(rng)
		cities[i] = CityRow{
			Name:      name,
			Slug:      SyntheticPrefix + Slugify(name) + "-" + strconv.Itoa(i+1),
			Country:   countries[rng.IntN(len(countries))],
			Lat:       strconv.FormatFloat(rng.Float64()*125-55, 'f', 6, 64),
			Lon:       strconv.FormatFloat(rng.Float64()*360-180, 'f', 6, 64),
			Confirmed: rng.IntN(10) != 0,
		}
	}
	spaces := make([]SpaceRow, opts.Spaces)
	for j := range spaces {
		// Skewed towards the first cities: a few big cities hold many spaces.
		u := rng.Float64()
		city := cities[int(u*u*float64(len(cities)))]
		name := spaceWords[rng.IntN(len(spaceWords))] + " " + spaceSuffixes[rng.IntN(len(spaceSuffixes))]
		slug := SyntheticPrefix + Slugify(name) + "-" + strconv.Itoa(j+1)
		addr := strconv.Itoa(1+rng.IntN(250)) + " " + streetWords[rng.IntN(len(streetWords))] + " " +
			streetKinds[rng.IntN(len(streetKinds))] + ", " + city.Name
		sp := SpaceRow{
			Name:      name,
			Slug:      slug,
			Address:   addr,
			Lat:       offset(city.Lat, rng.Uint32(), 0.05, 90),
			Lon:       offset(city.Lon, rng.Uint32(), 0.05, 180),
			CitySlug:  city.Slug,
			Confirmed: rng.IntN(100) < 85,
			IsPro:     rng.IntN(100) < 25,
		}
		website, linkedin := rng.IntN(100) < 60, rng.IntN(100) < 40
		if website {
			sp.Website = ptr("https://" + strings.TrimPrefix(slug, SyntheticPrefix) + ".example.com")
		}
		if linkedin {
			sp.LinkedIn = ptr("https://www.linkedin.com/company/" + strings.TrimPrefix(slug, SyntheticPrefix))
		}
		spaces[j] = sp
	}
	return cities, spaces
}

func syntheticCityName(rng *rand.Rand) string {
	var b strings.Builder
	for range 2 + rng.IntN(2) {
		b.WriteString(syllables[rng.IntN(len(syllables))])
	}
	word := []byte(b.String())
	name := string(word)
	if rng.IntN(100) < 15 { // give some names a diacritic, to exercise accent folding
		for k, ch := range word {
			if alts, ok := accents[ch]; ok {
				name = string(word[:k]) + alts[rng.IntN(len(alts))] + string(word[k+1:])
				break
			}
		}
	}
	r, size := utf8.DecodeRuneInString(name)
	name = string(unicode.ToUpper(r)) + name[size:]
	if rng.IntN(100) < 20 {
		name = cityPrefixes[rng.IntN(len(cityPrefixes))] + " " + name
	}
	return name
}

// LoadSynthetic replaces the previous synthetic rows (or, with Reset, the
// whole directory) with the set generated from opts, using COPY.
func LoadSynthetic(ctx context.Context, pool *pgxpool.Pool, opts SyntheticOptions) (Stats, error) {
	if err := opts.Validate(); err != nil {
		return Stats{}, err
	}
	cities, spaces := Synthetic(opts)
	var stats Stats
	err := inTx(ctx, pool, func(tx pgx.Tx) error {
		if opts.Reset {
			if _, err := tx.Exec(ctx, `TRUNCATE space_photos, space_admins, spaces, cities RESTART IDENTITY`); err != nil {
				return fmt.Errorf("truncate: %w", err)
			}
		} else {
			if _, err := tx.Exec(ctx, `DELETE FROM spaces WHERE starts_with(slug, $1)`, SyntheticPrefix); err != nil {
				return fmt.Errorf("delete synthetic spaces: %w", err)
			}
			if _, err := tx.Exec(ctx, `DELETE FROM cities WHERE starts_with(slug, $1)`, SyntheticPrefix); err != nil {
				return fmt.Errorf("delete synthetic cities: %w", err)
			}
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"cities"},
			[]string{"name", "slug", "country_code", "latitude", "longitude", "confirmed"},
			pgx.CopyFromSlice(len(cities), func(i int) ([]any, error) {
				c := cities[i]
				lat, err := numeric(c.Lat)
				if err != nil {
					return nil, err
				}
				lon, err := numeric(c.Lon)
				if err != nil {
					return nil, err
				}
				return []any{c.Name, c.Slug, c.Country, lat, lon, c.Confirmed}, nil
			}))
		if err != nil {
			return fmt.Errorf("copy cities: %w", err)
		}
		ids, err := cityIDs(ctx, tx)
		if err != nil {
			return err
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"spaces"},
			[]string{"name", "slug", "address", "latitude", "longitude", "city_id", "confirmed", "is_pro", "website", "linkedin_url"},
			pgx.CopyFromSlice(len(spaces), func(i int) ([]any, error) {
				s := spaces[i]
				lat, err := numeric(s.Lat)
				if err != nil {
					return nil, err
				}
				lon, err := numeric(s.Lon)
				if err != nil {
					return nil, err
				}
				return []any{s.Name, s.Slug, s.Address, lat, lon, ids[s.CitySlug], s.Confirmed, s.IsPro, s.Website, s.LinkedIn}, nil
			}))
		if err != nil {
			return fmt.Errorf("copy spaces: %w", err)
		}
		if _, err := tx.Exec(ctx, `ANALYZE cities, spaces`); err != nil {
			return fmt.Errorf("analyze: %w", err)
		}
		stats, err = Count(ctx, tx)
		return err
	})
	if err != nil {
		return Stats{}, fmt.Errorf("load synthetic: %w", err)
	}
	return stats, nil
}

func numeric(s string) (pgtype.Numeric, error) {
	var n pgtype.Numeric
	if err := n.Scan(s); err != nil {
		return n, fmt.Errorf("numeric %q: %w", s, err)
	}
	return n, nil
}
