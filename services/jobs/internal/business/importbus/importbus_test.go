package importbus

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/validate"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

func str(s string) *string { return &s }
func num(n int64) *int64   { return &n }

// Every refusal of a registration is a 422 naming the field, before any
// store is asked (the store here is nil: a call would panic).
func TestRegisterRefusals(t *testing.T) {
	t.Parallel()
	b := New(nil, nil, nil, Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	for _, tc := range []struct {
		in   Input
		want string
	}{
		{Input{}, "kind is required"},
		{Input{Kind: str("workday"), URL: str("https://f.example/x")}, "kind must be one of"},
		{Input{Kind: str("json")}, "url is required for the json kind"},
		{Input{Kind: str("json"), Token: str("board")}, "the json kind takes a url"},
		{Input{Kind: str("lever"), Company: str("X")}, "token or url is required"},
		{Input{Kind: str("lever"), Token: str("a"), URL: str("https://f.example/x"), Company: str("X")}, "give one of them"},
		{Input{Kind: str("lever"), Token: str("de/sk"), Company: str("X")}, "token must be a board token"},
		{Input{Kind: str("lever"), Token: str("desk")}, "company is required"},
		{Input{Kind: str("json"), URL: str("http://f.example/x")}, "url must use https"},
		{Input{Kind: str("json"), URL: str("ftp://f.example/x")}, "url must be an http(s) URL"},
		{Input{Kind: str("json"), URL: str("https://u:p@f.example/x")}, "user name or password"},
		{Input{Kind: str("json"), URL: str("https://169.254.169.254/latest")}, "url must not name a private"},
		{Input{Kind: str("json"), URL: str("https://10.1.2.3/x")}, "url must not name a private"},
		{Input{Kind: str("json"), URL: str("https://[::ffff:192.168.0.1]/x")}, "url must not name a private"},
		{Input{Kind: str("json"), URL: str("https://f.example/x"), IntervalMinutes: num(14)}, "interval_minutes must be between 15"},
		{Input{Kind: str("json"), URL: str("https://f.example/x"), IntervalMinutes: num(20000)}, "interval_minutes must be between 15"},
		{Input{Kind: str("json"), URL: str("https://f.example/x"), Mode: str("upsert")}, "mode must be replace"},
		{Input{Kind: str("json"), URL: str("https://f.example/x"), Company: str(strings.Repeat("a", 201))}, "company must be at most"},
	} {
		_, err := b.Register(context.Background(), jobbus.Caller{KeyID: 1}, tc.in)
		var ve *validate.Error
		if !errors.As(err, &ve) || !strings.Contains(strings.Join(ve.Problems, "; "), tc.want) {
			t.Errorf("%+v: %v, want a problem %q", tc.in, err, tc.want)
		}
	}
}

// A space key's source needs a confirmed Pro space (the stats' rule).
func TestRegisterPlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sp   jobbus.Space
		ok   bool
		want error
	}{
		{jobbus.Space{ID: 3, Confirmed: true, IsPro: false}, true, ErrPlan},
		{jobbus.Space{ID: 3, Confirmed: false, IsPro: true}, true, ErrPlan},
		{jobbus.Space{}, false, ErrPlan},
	} {
		b := New(nil, nil, spaces{tc.sp, tc.ok}, Config{})
		_, err := b.Register(context.Background(), jobbus.Caller{KeyID: 1, SpaceID: 3}, Input{Kind: str("json"), URL: str("https://f.example/x")})
		if !errors.Is(err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.sp, err, tc.want)
		}
	}
}

type spaces struct {
	sp jobbus.Space
	ok bool
}

func (s spaces) Space(context.Context, int64) (jobbus.Space, bool, error) { return s.sp, s.ok, nil }
