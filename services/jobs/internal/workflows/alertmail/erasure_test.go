package alertmail

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// An address is stored once and goes with its last alert; erasing it takes
// its alerts and queues the sealed hand-over to community, never the address.
func TestAddressStoredOnceAndErased(t *testing.T) {
	ctx := context.Background()
	r, _ := fixture(t)
	run := alertbus.NewNonce()[:6]
	email := "once-" + strings.ToLower(run) + "@seeker.example"
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	a1 := saved(t, r, strings.ToUpper(email), "city=lisbon-once&q=host", true) // the address in another case: the same row
	a2 := saved(t, r, email, "city=lisbon-once&q=cook", false)
	if got, err := db(r).Get(ctx, a1.ID); err != nil || got.Email != email {
		t.Fatalf("Get: %q, %v; want the address filled in, normalised", got.Email, err)
	}
	if n := count(`SELECT count(*) FROM alert_addresses WHERE email = $1`, email); n != 1 {
		t.Fatalf("%d address rows for two alerts, want 1", n)
	}
	if err := db(r).Delete(ctx, a1.ID); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM alert_addresses WHERE email = $1`, email); n != 1 {
		t.Fatal("the address went while another alert holds it")
	}
	if err := db(r).Delete(ctx, a2.ID); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM alert_addresses WHERE email = $1`, email); n != 0 {
		t.Fatal("the address stayed after its last alert")
	}

	// Erasure: every alert, the address, one sealed row for community.
	saved(t, r, email, "city=lisbon-once&q=host", true)
	saved(t, r, email, "city=lisbon-once&q=cook", true)
	tok := r.Privacy.Token(email)
	before := count(`SELECT count(*) FROM privacy_outbox`)
	n, err := db(r).EraseAddress(ctx, email, tok)
	if err != nil || n != 2 {
		t.Fatalf("EraseAddress: %d, %v; want 2", n, err)
	}
	if c := count(`SELECT count(*) FROM alert_addresses WHERE email = $1`, email); c != 0 {
		t.Fatal("the address stayed after its erasure")
	}
	if c := count(`SELECT count(*) FROM privacy_outbox WHERE token = $1`, tok); c != 1 || count(`SELECT count(*) FROM privacy_outbox`) != before+1 {
		t.Fatal("the erasure was not queued for community")
	}
	if c := count(`SELECT count(*) FROM privacy_outbox WHERE token ILIKE '%' || $1 || '%'`, "seeker.example"); c != 0 {
		t.Fatal("the outbox holds an address in clear")
	}
	_, _ = pool.Exec(ctx, `DELETE FROM privacy_outbox WHERE token = $1`, tok)
}

// Every alert mail carries the erasure link of its own address.
func TestMailsCarryTheErasureLink(t *testing.T) {
	r, _ := fixture(t)
	a := alertbus.Alert{ID: 7, Email: "link@seeker.example", Search: "q=host", Frequency: alertbus.Instant, Nonce: "n"}
	j := jobbus.Job{ID: 9, Title: "Host", Company: "Factory", CityName: "Berlin", Slug: "host"}
	for name, m := range map[string]string{"confirm": r.ConfirmMail([]alertbus.Alert{a}).Text, "confirm html": r.ConfirmMail([]alertbus.Alert{a}).HTML,
		"match": r.MatchMail(a, j).Text, "match html": r.MatchMail(a, j).HTML,
		"digest": r.DigestMail(a, []jobbus.Job{j}).Text, "digest html": r.DigestMail(a, []jobbus.Job{j}).HTML} {
		i := strings.Index(m, base+privacy.ErasePath+"?token=")
		if i < 0 {
			t.Fatalf("%s: no erasure link:\n%s", name, m)
		}
		rest := m[i+len(base+privacy.ErasePath+"?token="):]
		tok, _ := url.QueryUnescape(strings.FieldsFunc(rest, func(c rune) bool { return c == '"' || c == '\n' || c == ' ' })[0])
		if got, err := r.Privacy.Open(tok); err != nil || got != a.Email {
			t.Fatalf("%s: the link opens to %q, %v", name, got, err)
		}
	}
}
