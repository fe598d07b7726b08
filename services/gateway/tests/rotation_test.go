package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// mayGrant restates the spec's rule of what a key may grant, apart from the
// code under test: a scope it holds, or a narrower one (write covers
// jobs:write and read; read or write cover each resource's read scope).
func mayGrant(held []string, s string) bool {
	has := func(x string) bool { return slices.Contains(held, x) }
	switch {
	case has(s):
		return true
	case s == "read" || s == "jobs:write":
		return has("write")
	case strings.HasSuffix(s, ":read"):
		return has("read") || has("write")
	}
	return false
}

// Issue 44's reproduction: a key with keys:manage renews another key of its
// space only when it could have created it. Rotating a key that holds what
// the caller lacks (events:read, webhooks:manage, a trusted importer) is a
// 403 naming it, the target keeps working unreplaced, and the audit log
// records the attempt; a key renewing itself, or a broader caller, may.
func TestRotationCannotEscalate(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gatewayOpts{})
	space := newSpace()
	mgrKey, mgr := g.newKey(t, keybus.NewKey{SpaceID: space, Scopes: []string{"jobs:read", "jobs:write", "keys:manage"}})
	events, _ := g.newKey(t, keybus.NewKey{SpaceID: space, Scopes: []string{"events:read", "spaces:read"}})
	hooks, _ := g.newKey(t, keybus.NewKey{SpaceID: space, Scopes: []string{"jobs:read", "webhooks:manage"}})
	trusted, _ := g.newKey(t, keybus.NewKey{SpaceID: space, Scopes: []string{"jobs:read"}, TrustedImporter: true})
	_, broad := g.newKey(t, keybus.NewKey{SpaceID: space, Scopes: []string{"read", "jobs:write", "keys:manage"}})

	if r := do(t, "GET", g.base+"/v2/events", "", keyHdr(mgr)); r.status != 403 {
		t.Fatalf("GET /v2/events with the manager: %d, want 403", r.status)
	}
	for _, tc := range []struct {
		target keybus.Key
		says   string
	}{{events, "events:read"}, {hooks, "webhooks:manage"}, {trusted, "trusted-importer"}} {
		id := strconv.FormatInt(tc.target.ID, 10)
		r := do(t, "POST", g.base+"/v2/keys/"+id+"/rotate", `{"grace_seconds":604800}`, keyHdr(mgr))
		if r.status != 403 || !strings.Contains(string(r.raw), tc.says) || strings.Contains(string(r.raw), "svc_") {
			t.Errorf("rotate %s: %d %s, want 403 naming %s", tc.says, r.status, r.raw, tc.says)
		}
		var k apiKey
		if r := do(t, "GET", g.base+"/v2/keys/"+id, "", keyHdr(mgr)); r.status == 200 {
			r.data(t, &k)
		}
		if k.Status != "active" || k.ReplacedBy != nil {
			t.Errorf("after the refused rotation the %s key is %+v", tc.says, k)
		}
	}
	refused := 0
	for _, e := range auditEvents(t, g, mgr) {
		if e.Event == keybus.EventRotateRefused {
			refused++
			if e.Actor.Type != "key" || e.Actor.KeyID == nil || *e.Actor.KeyID != mgrKey.ID {
				t.Errorf("refused rotation recorded with actor %+v", e.Actor)
			}
		}
	}
	if refused != 3 {
		t.Errorf("%d refused rotations in the audit log, want 3", refused)
	}
	// A key renewing itself grants nothing new; a caller holding read covers events:read and spaces:read.
	r := do(t, "POST", g.base+"/v2/keys/"+strconv.FormatInt(mgrKey.ID, 10)+"/rotate", "", keyHdr(mgr))
	var self apiKey
	if r.status == 201 {
		r.data(t, &self)
	}
	if r.status != 201 || !slices.Equal(self.Scopes, mgrKey.Scopes) {
		t.Errorf("self rotation: %d %s", r.status, r.raw)
	}
	if r := do(t, "POST", g.base+"/v2/keys/"+strconv.FormatInt(events.ID, 10)+"/rotate", "", keyHdr(broad)); r.status != 201 {
		t.Errorf("rotation by a caller holding read: %d %s", r.status, r.raw)
	}
}

type auditEvent struct {
	ID    int64  `json:"id"`
	KeyID int64  `json:"key_id"`
	Event string `json:"event"`
	Actor struct {
		Type  string `json:"type"`
		KeyID *int64 `json:"key_id"`
	} `json:"actor"`
	IP            *string `json:"ip"`
	ReplacementID *int64  `json:"replacement_id"`
}

func auditEvents(t *testing.T, g *gateway, raw string) []auditEvent {
	t.Helper()
	r := do(t, "GET", g.base+"/v2/keys/events?limit=100", "", keyHdr(raw))
	var page struct {
		Events []auditEvent `json:"events"`
	}
	r.data(t, &page)
	return page.Events
}

// Rotation as a property: random sequences of creations, rotations and
// revocations by random callers — the seeded keys of every kind, and every
// key minted along the way — never yield a key holding a scope its minter
// could not grant, nor a trusted importer; a key renewing itself keeps
// exactly its own scopes.
func TestRotationGrantsNothingItsCallerLacks(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gatewayOpts{writeLimit: 100000})
	type held struct {
		id     int64
		raw    string
		scopes []string
	}
	var callers []held
	space := newSpace()
	for _, scopes := range [][]string{
		{"keys:manage", "jobs:read"}, {"keys:manage", "jobs:read", "jobs:write"}, {"keys:manage", "read", "webhooks:manage"},
		{"events:read", "spaces:read"}, {"webhooks:manage", "jobs:read"}, {"read", "jobs:write"}, {"keys:manage", "events:read"},
	} {
		k, raw := g.newKey(t, keybus.NewKey{SpaceID: space, Scopes: scopes})
		callers = append(callers, held{k.ID, raw, k.Scopes})
	}
	tk, raw := g.newKey(t, keybus.NewKey{SpaceID: space, Scopes: []string{"read", "jobs:write"}, TrustedImporter: true})
	callers = append(callers, held{tk.ID, raw, tk.Scopes})
	plat, praw := g.newKey(t, keybus.NewKey{Scopes: []string{"keys:manage", "jobs:read", "alerts:write"}})
	callers = append(callers, held{plat.ID, praw, plat.Scopes})
	mintedIDs := map[int64]bool{}

	rng := rand.New(rand.NewPCG(44, uint64(space)))
	pick := func(from []string) string {
		n := 1 + rng.IntN(3)
		var s []string
		for range n {
			s = append(s, `"`+from[rng.IntN(len(from))]+`"`)
		}
		return "[" + strings.Join(slices.Compact(s), ",") + "]"
	}
	var minted, refused int
	statuses := map[int]int{}
	for step := range 240 {
		c := callers[rng.IntN(len(callers))]
		var ks []apiKey // the caller's keys: none for a caller without keys:manage
		if r := do(t, "GET", g.base+"/v2/keys", "", keyHdr(c.raw)); r.status == 200 {
			var out struct {
				Keys []apiKey `json:"keys"`
			}
			r.data(t, &out)
			ks = out.Keys
		}
		switch op := rng.IntN(3); {
		case op == 0:
			from := keybus.AllScopes // half the time ask for any scope, half for the caller's own
			if rng.IntN(2) == 0 {
				from = c.scopes
			}
			r := do(t, "POST", g.base+"/v2/keys", fmt.Sprintf(`{"name":"p%d","scopes":%s}`, step, pick(from)), keyHdr(c.raw))
			statuses[r.status]++
			if r.status == 201 {
				var k apiKey
				r.data(t, &k)
				for _, s := range k.Scopes {
					if !mayGrant(c.scopes, s) {
						t.Errorf("step %d: a key holding %v created one with %s", step, c.scopes, s)
					}
				}
				callers = append(callers, held{k.ID, k.Key, k.Scopes})
				mintedIDs[k.ID] = true
				minted++
			}
		case op == 1 && len(ks) > 0:
			target := ks[rng.IntN(len(ks))]
			r := do(t, "POST", g.base+"/v2/keys/"+strconv.FormatInt(target.ID, 10)+"/rotate", `{"grace_seconds":600}`, keyHdr(c.raw))
			statuses[1000+r.status]++
			switch r.status {
			case 201:
				var k apiKey
				r.data(t, &k)
				self := target.ID == c.id
				for _, s := range k.Scopes {
					if !self && !mayGrant(c.scopes, s) {
						t.Errorf("step %d: a key holding %v rotated one into %v", step, c.scopes, k.Scopes)
					}
				}
				if self && !slices.Equal(k.Scopes, c.scopes) {
					t.Errorf("step %d: a key renewing itself went from %v to %v", step, c.scopes, k.Scopes)
				}
				callers = append(callers, held{k.ID, k.Key, k.Scopes})
				mintedIDs[k.ID] = true
				minted++
			case 403:
				refused++
			}
		case len(ks) > 20: // under the cap of 25 active keys
			do(t, "DELETE", g.base+"/v2/keys/"+strconv.FormatInt(ks[rng.IntN(len(ks))].ID, 10)+"?allow_no_manager=true", "", keyHdr(c.raw))
		}
	}
	all, err := keyStore().List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range all {
		if mintedIDs[k.ID] && k.TrustedImporter {
			t.Errorf("key %d, minted through the API, is a trusted importer", k.ID)
		}
	}
	if minted < 20 || refused == 0 {
		t.Errorf("the walk minted %d keys and was refused %d times: it explored too little (%v)", minted, refused, statuses)
	}
}
