package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// apiKey is a key as GET /v2/keys shows it, plus the secret on creation.
type apiKey struct {
	ID             int64    `json:"id"`
	Name           string   `json:"name"`
	Prefix         string   `json:"prefix"`
	Hint           string   `json:"hint"`
	Scopes         []string `json:"scopes"`
	Restricted     bool     `json:"restricted"`
	SpaceID        *int64   `json:"space_id"`
	Status         string   `json:"status"`
	RevokedAt      *string  `json:"revoked_at"`
	ReplacedBy     *int64   `json:"replaced_by"`
	CreatedByKeyID *int64   `json:"created_by_key_id"`
	Key            string   `json:"key"`
}

func keyHdr(raw string) map[string]string { return map[string]string{"X-API-Key": raw} }

func createKey(t *testing.T, g *gateway, raw, body string) (response, apiKey) {
	t.Helper()
	r := do(t, "POST", g.base+"/v2/keys", body, keyHdr(raw))
	var k apiKey
	if r.status == http.StatusCreated {
		r.data(t, &k)
	}
	return r, k
}

func listKeys(t *testing.T, g *gateway, raw string) []apiKey {
	t.Helper()
	r := do(t, "GET", g.base+"/v2/keys", "", keyHdr(raw))
	if r.status != 200 {
		t.Fatalf("GET /v2/keys: %d %s", r.status, r.raw)
	}
	var out struct {
		Keys []apiKey `json:"keys"`
	}
	r.data(t, &out)
	return out.Keys
}

// newSpace is a space id no other test uses, so listings are this test's.
func newSpace() int64 { return 1_000_000 + rand.Int64N(1_000_000_000) }

// Each kind of caller against each key route: who gets in, and what they
// see, from the route table's scope check and the key rules together.
func TestKeyAPIMatrix(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gatewayOpts{})
	space := newSpace()
	_, spaceMgr := g.newKey(t, keybus.NewKey{SpaceID: space, Scopes: []string{"keys:manage", "read", "jobs:write"}})
	_, spacePlain := g.newKey(t, keybus.NewKey{SpaceID: space, Scopes: []string{"read", "jobs:write"}})
	_, spaceRstr := g.newKey(t, keybus.NewKey{SpaceID: space, Restricted: true, Scopes: []string{"keys:manage", "read"}})
	_, platMgr := g.newKey(t, keybus.NewKey{Scopes: []string{"keys:manage", "write"}})
	_, platPlain := g.newKey(t, keybus.NewKey{Scopes: []string{"write"}})
	// A key of the space to act on.
	_, target := createKey(t, g, spaceMgr, `{"name":"target","scopes":["jobs:read"]}`)
	if target.ID == 0 {
		t.Fatal("no target key")
	}
	id := strconv.FormatInt(target.ID, 10)
	type call struct{ method, path, body string }
	calls := []call{
		{"GET", "/v2/keys", ""},
		{"POST", "/v2/keys", `{"name":"x","scopes":["jobs:read"]}`},
		{"GET", "/v2/keys/events", ""},
		{"GET", "/v2/keys/" + id, ""},
		{"POST", "/v2/keys/" + id + "/rotate", `{"grace_seconds":60}`},
		{"DELETE", "/v2/keys/" + id, ""},
	}
	for _, tc := range []struct {
		name string
		raw  string
		want []int // per call
	}{
		{"no key", "", []int{401, 401, 401, 401, 401, 401}},
		{"space key without keys:manage", spacePlain, []int{403, 403, 403, 403, 403, 403}},
		{"restricted space key with keys:manage", spaceRstr, []int{403, 403, 403, 403, 403, 403}},
		// Another owner's key id is unknown to a platform key.
		{"platform key with keys:manage", platMgr, []int{200, 201, 200, 404, 404, 404}},
		{"platform key without keys:manage", platPlain, []int{403, 403, 403, 403, 403, 403}},
		// Last: it rotates the target (then the replacement is the key) and revokes it.
		{"space key with keys:manage", spaceMgr, []int{200, 201, 200, 200, 201, 204}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, c := range calls {
				hdr := map[string]string{}
				if tc.raw != "" {
					hdr["X-API-Key"] = tc.raw
				}
				r := do(t, c.method, g.base+c.path, c.body, hdr)
				if r.status != tc.want[i] {
					t.Errorf("%s %s: %d, want %d: %s", c.method, c.path, r.status, tc.want[i], r.raw)
				}
			}
		})
	}
	// Revoking a revoked key changes nothing.
	r := do(t, "DELETE", g.base+"/v2/keys/"+id, "", keyHdr(spaceMgr))
	if r.status != 204 {
		t.Fatalf("revoke again: %d %s", r.status, r.raw)
	}
}

// A key grants nothing it does not hold, and a space's key nothing beyond
// the space scopes; bad requests are 422 naming the field; nothing is stored.
func TestKeyAPIRefusesEscalationAndBadInput(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gatewayOpts{})
	space := newSpace()
	_, mgr := g.newKey(t, keybus.NewKey{SpaceID: space, Scopes: []string{"keys:manage", "jobs:read"}})
	_, plat := g.newKey(t, keybus.NewKey{Scopes: []string{"keys:manage", "jobs:read"}})
	for _, tc := range []struct {
		raw, body string
		status    int
		says      string
	}{
		{mgr, `{"name":"a","scopes":["jobs:write"]}`, 403, "jobs:write"},
		{mgr, `{"name":"a","scopes":["read"]}`, 403, "read"},
		{mgr, `{"name":"a","scopes":["write"]}`, 403, "write"},
		{plat, `{"name":"a","scopes":["write"]}`, 403, "write"},
		{plat, `{"name":"a","scopes":["jobs:read","spaces:read"]}`, 403, "spaces:read"},
		{mgr, `{"name":"a","scopes":["admin"]}`, 422, "unknown scope"},
		{mgr, `{"name":"a","scopes":[]}`, 422, "scopes"},
		{mgr, `{"name":"a"}`, 422, "scopes"},
		{mgr, `{"name":"","scopes":["jobs:read"]}`, 422, "name"},
		{mgr, `{"name":"` + strings.Repeat("n", 201) + `","scopes":["jobs:read"]}`, 422, "name"},
		{mgr, `{"name":"a\u0007b","scopes":["jobs:read"]}`, 422, "control"},
		{mgr, `{"name":"a","scopes":["jobs:read"],"rate_limit_per_minute":0}`, 422, "rate_limit_per_minute"},
		{mgr, `{"name":"a","scopes":["jobs:read"],"rate_limit_per_minute":100000}`, 422, "rate_limit_per_minute"},
		{mgr, `{"name":"a","scopes":["jobs:read"],"rate_limit_per_minute":"5"}`, 422, "rate_limit_per_minute"},
		{mgr, `{"name":"a","scopes":"jobs:read"}`, 422, "array"},
		{mgr, `{"name":"a","scopes":["jobs:read"],"space_id":7}`, 422, "space_id"},
		{mgr, `{"name":"a","scopes":["jobs:read"],"trusted_importer":true}`, 422, "trusted_importer"},
		{mgr, `[1]`, 400, ""},
	} {
		r := do(t, "POST", g.base+"/v2/keys", tc.body, keyHdr(tc.raw))
		if r.status != tc.status || !strings.Contains(string(r.raw), tc.says) {
			t.Errorf("%s: %d %s, want %d naming %q", tc.body, r.status, r.raw, tc.status, tc.says)
		}
	}
	// The space lists its manager alone; the platform key owns none.
	for raw, want := range map[string]int{mgr: 1, plat: 0} {
		if n := len(listKeys(t, g, raw)); n != want {
			t.Errorf("a refused request stored keys: %d listed, want %d", n, want)
		}
	}
	// A platform key's own key has no space and is owned by it; a space's is the space's.
	_, pk := createKey(t, g, plat, `{"name":"child","scopes":["jobs:read"],"restricted":true}`)
	if pk.SpaceID != nil || pk.CreatedByKeyID == nil || !pk.Restricted || pk.Prefix != keybus.PrefixRestricted {
		t.Errorf("platform child: %+v", pk)
	}
	_, sk := createKey(t, g, mgr, `{"name":"widget","scopes":["jobs:read"]}`)
	if sk.SpaceID == nil || *sk.SpaceID != space {
		t.Errorf("space child: %+v", sk)
	}
	// Bad ids, queries and bodies on the other routes.
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/v2/keys/999999999", "", 404},
		{"GET", "/v2/keys/0", "", 404},
		{"GET", "/v2/keys/abc", "", 404},
		{"DELETE", "/v2/keys/999999999", "", 404},
		{"POST", "/v2/keys/999999999/rotate", "", 404},
		{"POST", "/v2/keys/" + strconv.FormatInt(sk.ID, 10) + "/rotate", `{"grace_seconds":604801}`, 422},
		{"POST", "/v2/keys/" + strconv.FormatInt(sk.ID, 10) + "/rotate", `{"grace_seconds":-1}`, 422},
		{"POST", "/v2/keys/" + strconv.FormatInt(sk.ID, 10) + "/rotate", `{"grace":1}`, 422},
		{"DELETE", "/v2/keys/" + strconv.FormatInt(sk.ID, 10) + "?allow_no_manager=maybe", "", 422},
		{"GET", "/v2/keys/events?limit=0", "", 422},
		{"GET", "/v2/keys/events?limit=101", "", 422},
		{"GET", "/v2/keys/events?cursor=bogus", "", 422},
	} {
		r := do(t, tc.method, g.base+tc.path, tc.body, keyHdr(mgr))
		if r.status != tc.status {
			t.Errorf("%s %s %s: %d %s, want %d", tc.method, tc.path, tc.body, r.status, r.raw, tc.status)
		}
	}
}

// A created key works at once with exactly its grants; the full key is in
// the creation answer only.
func TestCreatedKeyWorksAndIsShownOnce(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gatewayOpts{})
	space := newSpace()
	_, mgr := g.newKey(t, keybus.NewKey{SpaceID: space, Scopes: []string{"keys:manage", "read", "jobs:write"}})
	r, k := createKey(t, g, mgr, `{"name":"poster","scopes":["jobs:write"],"rate_limit_per_minute":30}`)
	if r.status != 201 || !strings.HasPrefix(k.Key, keybus.PrefixLive) || r.header.Get("Location") != "/v2/keys/"+strconv.FormatInt(k.ID, 10) {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	if !strings.HasPrefix(k.Key, strings.TrimSuffix(k.Hint[:strings.Index(k.Hint, "…")], "")) {
		t.Errorf("hint %q does not start the key", k.Hint)
	}
	// It reaches the backend with its space and scopes.
	b := do(t, "POST", g.base+"/v2/jobs", `{}`, map[string]string{"X-API-Key": k.Key})
	var s seen
	b.data(t, &s)
	if b.status != 201 || s.Identity.SpaceID != space || !slices.Equal(s.Identity.Scopes, []string{"jobs:write"}) {
		t.Fatalf("new key at the backend: %d %+v", b.status, s.Identity)
	}
	if lim := b.header.Get("X-RateLimit-Limit"); lim != "30" {
		t.Errorf("its own rate limit: %q", lim)
	}
	// Nothing else ever shows it.
	for _, path := range []string{"/v2/keys", "/v2/keys/" + strconv.FormatInt(k.ID, 10), "/v2/keys/events"} {
		r := do(t, "GET", g.base+path, "", keyHdr(mgr))
		if strings.Contains(string(r.raw), k.Key) || strings.Contains(string(r.raw), k.Key[len(k.Key)-20:]) {
			t.Errorf("%s shows the secret", path)
		}
	}
	if strings.Contains(g.logs.String(), k.Key) {
		t.Error("the logs show the secret")
	}
}

// Revocation reaches every gateway replica within KEY_CACHE_TTL, and the
// replica that revoked at once.
func TestRevocationOnTwoGateways(t *testing.T) {
	t.Parallel()
	ttl := 500 * time.Millisecond
	a := startGateway(t, gatewayOpts{cacheTTL: ttl})
	b := startGateway(t, gatewayOpts{cacheTTL: ttl})
	space := newSpace()
	_, mgr := a.newKey(t, keybus.NewKey{SpaceID: space, Scopes: []string{"keys:manage", "read"}})
	_, k := createKey(t, a, mgr, `{"name":"doomed","scopes":["jobs:read"]}`)
	for _, g := range []*gateway{a, b} { // both have it cached as valid
		if r := do(t, "GET", g.base+"/v2/jobs", "", keyHdr(k.Key)); r.status != 200 {
			t.Fatalf("before: %d", r.status)
		}
	}
	revokedAt := time.Now()
	if r := do(t, "DELETE", a.base+"/v2/keys/"+strconv.FormatInt(k.ID, 10), "", keyHdr(mgr)); r.status != 204 {
		t.Fatalf("revoke: %d %s", r.status, r.raw)
	}
	if r := do(t, "GET", a.base+"/v2/jobs", "", keyHdr(k.Key)); r.status != 401 {
		t.Errorf("the revoking gateway still accepts it: %d", r.status)
	}
	// The other gateway refuses it once its cached entry has aged out; the
	// bound is the TTL (a generous deadline, not a timing assertion).
	deadline := revokedAt.Add(ttl + 10*time.Second)
	for {
		r := do(t, "GET", b.base+"/v2/jobs", "", keyHdr(k.Key))
		if r.status == 401 {
			if since := time.Since(revokedAt); since < 0 {
				t.Fatal("clock")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second gateway never refused the revoked key")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Revoking again is a no-op 204.
	if r := do(t, "DELETE", b.base+"/v2/keys/"+strconv.FormatInt(k.ID, 10), "", keyHdr(mgr)); r.status != 204 {
		t.Errorf("revoke again: %d", r.status)
	}
}

// A rotated key's old value works until the end of its grace period on
// every replica, then stops; the new one works at once.
func TestRotationWithGracePeriod(t *testing.T) {
	t.Parallel()
	ttl := 500 * time.Millisecond
	a := startGateway(t, gatewayOpts{cacheTTL: ttl})
	b := startGateway(t, gatewayOpts{cacheTTL: ttl})
	space := newSpace()
	_, mgr := a.newKey(t, keybus.NewKey{SpaceID: space, Scopes: []string{"keys:manage", "read"}})
	_, old := createKey(t, a, mgr, `{"name":"rotating","scopes":["jobs:read"]}`)
	if r := do(t, "GET", b.base+"/v2/jobs", "", keyHdr(old.Key)); r.status != 200 {
		t.Fatalf("before: %d", r.status)
	}
	r := do(t, "POST", a.base+"/v2/keys/"+strconv.FormatInt(old.ID, 10)+"/rotate", `{"grace_seconds":2}`, keyHdr(mgr))
	var nk apiKey
	if r.status != 201 {
		t.Fatalf("rotate: %d %s", r.status, r.raw)
	}
	r.data(t, &nk)
	if nk.Key == old.Key || nk.Name != old.Name || !slices.Equal(nk.Scopes, old.Scopes) {
		t.Fatalf("replacement: %+v", nk)
	}
	got := do(t, "GET", a.base+"/v2/keys/"+strconv.FormatInt(old.ID, 10), "", keyHdr(mgr))
	var o apiKey
	got.data(t, &o)
	if o.Status != "expiring" || o.ReplacedBy == nil || *o.ReplacedBy != nk.ID || o.RevokedAt == nil {
		t.Errorf("old key during grace: %+v", o)
	}
	// A second rotation of the old key is refused: rotate its replacement.
	if r := do(t, "POST", a.base+"/v2/keys/"+strconv.FormatInt(old.ID, 10)+"/rotate", "", keyHdr(mgr)); r.status != 409 {
		t.Errorf("rotate again: %d %s", r.status, r.raw)
	}
	for _, g := range []*gateway{a, b} {
		if r := do(t, "GET", g.base+"/v2/jobs", "", keyHdr(nk.Key)); r.status != 200 {
			t.Errorf("new key: %d", r.status)
		}
		if r := do(t, "GET", g.base+"/v2/jobs", "", keyHdr(old.Key)); r.status != 200 {
			t.Errorf("old key in its grace: %d", r.status)
		}
	}
	// After the grace period (and, on a replica that cached it before the
	// rotation, KEY_CACHE_TTL) both replicas refuse it.
	deadline := time.Now().Add(15 * time.Second)
	for _, g := range []*gateway{a, b} {
		for {
			if r := do(t, "GET", g.base+"/v2/jobs", "", keyHdr(old.Key)); r.status == 401 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the old key outlived its grace period")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// The audit log tells each event of the owner's keys, who did it and from
// where, newest first, page by page; another owner sees none of it.
func TestKeyAuditLog(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gatewayOpts{})
	space := newSpace()
	mgrKey, mgr := g.newKey(t, keybus.NewKey{SpaceID: space, Scopes: []string{"keys:manage", "read"}})
	_, other := g.newKey(t, keybus.NewKey{SpaceID: space + 1, Scopes: []string{"keys:manage", "read"}})
	var ids []int64
	for i := range 3 {
		_, k := createKey(t, g, mgr, fmt.Sprintf(`{"name":"k%d","scopes":["jobs:read"]}`, i))
		ids = append(ids, k.ID)
	}
	do(t, "POST", g.base+"/v2/keys/"+strconv.FormatInt(ids[0], 10)+"/rotate", `{"grace_seconds":3600}`, keyHdr(mgr))
	do(t, "DELETE", g.base+"/v2/keys/"+strconv.FormatInt(ids[1], 10), "", keyHdr(mgr))
	var all []auditEvent
	cursor := ""
	for pages := 0; ; pages++ {
		url := g.base + "/v2/keys/events?limit=2"
		if cursor != "" {
			url += "&cursor=" + cursor
		}
		r := do(t, "GET", url, "", keyHdr(mgr))
		var page struct {
			Events []auditEvent `json:"events"`
			Next   *string      `json:"next_cursor"`
		}
		r.data(t, &page)
		all = append(all, page.Events...)
		if page.Next == nil {
			break
		}
		if pages > 10 {
			t.Fatal("pages without end")
		}
		cursor = *page.Next
	}
	// The operator's creation of mgr + 3 creations + rotated + created (replacement) + revoked.
	var got []string
	for i, e := range all {
		if i > 0 && e.ID >= all[i-1].ID {
			t.Errorf("not newest first: %v", all)
		}
		got = append(got, e.Event)
		if e.Actor.Type == "key" && (e.Actor.KeyID == nil || *e.Actor.KeyID != mgrKey.ID || e.IP == nil || *e.IP == "") {
			t.Errorf("event %d: actor %+v ip %v", e.ID, e.Actor, e.IP)
		}
	}
	want := []string{"revoked", "created", "rotated", "created", "created", "created", "created"}
	if !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if all[2].ReplacementID == nil || all[2].KeyID != ids[0] || all[len(all)-1].Actor.Type != "operator" {
		t.Errorf("rotation event %+v, first %+v", all[2], all[len(all)-1])
	}
	r := do(t, "GET", g.base+"/v2/keys/events", "", keyHdr(other))
	var theirs struct {
		Events []auditEvent `json:"events"`
	}
	r.data(t, &theirs)
	for _, e := range theirs.Events {
		if e.KeyID == mgrKey.ID || slices.Contains(ids, e.KeyID) {
			t.Errorf("another space sees an event of this space's keys: %+v", e)
		}
	}
}

// Revoking the last key able to manage keys is refused unless asked for;
// the active keys of an owner are bounded.
func TestLastManagerAndKeyCap(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gatewayOpts{})
	space := newSpace()
	mgrKey, mgr := g.newKey(t, keybus.NewKey{SpaceID: space, Scopes: []string{"keys:manage", "read"}})
	self := g.base + "/v2/keys/" + strconv.FormatInt(mgrKey.ID, 10)
	if r := do(t, "DELETE", self, "", keyHdr(mgr)); r.status != 409 || !strings.Contains(string(r.raw), "allow_no_manager") {
		t.Fatalf("revoking the last manager: %d %s", r.status, r.raw)
	}
	// With a second manager the first may go; the second is then the last.
	_, second := createKey(t, g, mgr, `{"name":"second","scopes":["keys:manage","read"]}`)
	if r := do(t, "DELETE", self, "", keyHdr(mgr)); r.status != 204 {
		t.Fatalf("revoke self with another manager: %d %s", r.status, r.raw)
	}
	if r := do(t, "GET", g.base+"/v2/keys", "", keyHdr(mgr)); r.status != 401 {
		t.Errorf("a revoked key still manages: %d", r.status)
	}
	secondSelf := g.base + "/v2/keys/" + strconv.FormatInt(second.ID, 10)
	if r := do(t, "DELETE", secondSelf, "", keyHdr(second.Key)); r.status != 409 {
		t.Errorf("last manager: %d", r.status)
	}
	// The cap: the owner holds at most MaxActiveKeys active keys.
	active := 0
	for _, k := range listKeys(t, g, second.Key) {
		if k.Status == "active" {
			active++
		}
	}
	for i := active; i < keybus.MaxActiveKeys; i++ {
		if r, _ := createKey(t, g, second.Key, `{"name":"filler","scopes":["read"]}`); r.status != 201 {
			t.Fatalf("filler %d: %d %s", i, r.status, r.raw)
		}
	}
	if r, _ := createKey(t, g, second.Key, `{"name":"one too many","scopes":["read"]}`); r.status != 409 {
		t.Errorf("over the cap: %d %s", r.status, r.raw)
	}
	if r := do(t, "DELETE", secondSelf+"?allow_no_manager=true", "", keyHdr(second.Key)); r.status != 204 {
		t.Errorf("last manager, said so: %d %s", r.status, r.raw)
	}
}

// Ownership as a property: random key operations by random callers of two
// spaces and two platforms, concurrently; afterwards no caller ever changed
// or saw a key outside its own, and every refusal was a 403/404.
func TestKeyOwnershipProperty(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gatewayOpts{writeLimit: 100000})
	s1, s2 := newSpace(), newSpace()
	type caller struct {
		name  string
		raw   string
		owner keybus.Owner
		id    int64
	}
	mk := func(name string, space int64) caller {
		k, raw := g.newKey(t, keybus.NewKey{Name: name, SpaceID: space, Scopes: []string{"keys:manage", "read"}})
		o := keybus.Owner{SpaceID: space}
		if space == 0 {
			o = keybus.Owner{CreatedBy: k.ID}
		}
		return caller{name, raw, o, k.ID}
	}
	callers := []caller{mk("s1", s1), mk("s2", s2), mk("p1", 0), mk("p2", 0)}
	owns := func(c caller, k keybus.Key) bool {
		if c.owner.SpaceID != 0 {
			return k.SpaceID == c.owner.SpaceID
		}
		return k.SpaceID == 0 && k.CreatedByKeyID == c.owner.CreatedBy
	}
	var mu sync.Mutex
	var created []int64
	var failures []string
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range 40 {
				c := callers[rng.IntN(len(callers))]
				mu.Lock()
				var target int64
				if len(created) > 0 {
					target = created[rng.IntN(len(created))]
				}
				mu.Unlock()
				id := strconv.FormatInt(target, 10)
				var r response
				op := rng.IntN(4)
				switch op {
				case 0:
					r = do(t, "POST", g.base+"/v2/keys", `{"name":"p","scopes":["jobs:read"]}`, keyHdr(c.raw))
					if r.status == 201 {
						var k apiKey
						r.data(t, &k)
						mu.Lock()
						created = append(created, k.ID)
						mu.Unlock()
					}
				case 1:
					r = do(t, "GET", g.base+"/v2/keys/"+id, "", keyHdr(c.raw))
				case 2:
					r = do(t, "POST", g.base+"/v2/keys/"+id+"/rotate", `{"grace_seconds":1}`, keyHdr(c.raw))
					if r.status == 201 {
						var k apiKey
						r.data(t, &k)
						mu.Lock()
						created = append(created, k.ID)
						mu.Unlock()
					}
				case 3:
					r = do(t, "DELETE", g.base+"/v2/keys/"+id, "", keyHdr(c.raw))
				}
				if op == 0 || target == 0 {
					continue
				}
				k, err := keyStore().ByID(context.Background(), target)
				if err != nil {
					t.Error(err)
					return
				}
				allowed := owns(c, k)
				ok := r.status < 300
				if ok && !allowed {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s got %d on key %d of another owner: %s", c.name, r.status, target, r.raw))
					mu.Unlock()
				}
				if !ok && !allowed && r.status != 404 {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: %d on a foreign key (want 404)", c.name, r.status))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	// Every key of the test belongs to the owner whose caller made it, and
	// listings show exactly the owner's keys.
	all, _ := keyStore().List(context.Background())
	for _, c := range callers {
		var want []int64
		for _, k := range all {
			if owns(c, k) {
				want = append(want, k.ID)
			}
		}
		var got []int64
		for _, k := range listKeys(t, g, c.raw) {
			got = append(got, k.ID)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s lists %v, owns %v", c.name, got, want)
		}
	}
}

// Asking for sign-in links spends the client IP's budget of public posts,
// so one address cannot flood mailboxes; the refusal is an HTML page.
func TestDashboardSignInIsLimitedPerIP(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gatewayOpts{publicLimit: 3})
	for i := range 4 {
		req, _ := http.NewRequest("POST", g.base+"/dashboard/sign-in", strings.NewReader("email=a%40b.example"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := i == 3; (resp.StatusCode == 429) != want || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("request %d: %d %s", i+1, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
}
