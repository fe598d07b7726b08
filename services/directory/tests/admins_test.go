package tests

import (
	"encoding/json"
	"testing"
)

// The dashboard's membership look-up: an address's spaces with its role,
// compared without regard to case; an unknown address an empty list (never
// a 404); service identities only; the address is required.
func TestAdminSpaces(t *testing.T) {
	t.Parallel()
	type spaces struct {
		Spaces []struct {
			ID    int64  `json:"id"`
			Name  string `json:"name"`
			IsPro bool   `json:"is_pro"`
			Role  string `json:"role"`
		} `json:"spaces"`
	}
	for _, tc := range []struct {
		name, query string
		status, n   int
	}{
		{"known", "email=owner@spree-loft.example.com", 200, 1},
		{"knownAnyCase", "email=Owner@Spree-Loft.Example.com", 200, 1},
		{"unknown", "email=nobody@example.com", 200, 0},
		{"missing", "", 422, 0},
		{"empty", "email=", 422, 0},
		{"twice", "email=a@b.c&email=d@e.f", 422, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, env := get(t, "/internal/admins/spaces?"+tc.query, service)
			if status != tc.status {
				t.Fatalf("%d %+v", status, env)
			}
			if status != 200 {
				return
			}
			var got spaces
			b, _ := json.Marshal(env.Data)
			if err := json.Unmarshal(b, &got); err != nil || len(got.Spaces) != tc.n {
				t.Fatalf("%s: %v", b, err)
			}
			if tc.n == 1 && (got.Spaces[0].ID != 1 || got.Spaces[0].Role != "owner") {
				t.Errorf("%+v", got.Spaces[0])
			}
		})
	}
	if status, _ := get(t, "/internal/admins/spaces?email=owner@spree-loft.example.com", liveKey); status != 403 && status != 401 {
		t.Errorf("a key's identity reads admins: %d", status)
	}
}
