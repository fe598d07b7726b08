package tests

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/identity"
)

type candidate struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Slug string `json:"slug"`
}

type resolution struct {
	Result string `json:"result"`
	City   *struct {
		ID        int64  `json:"id"`
		Name      string `json:"name"`
		Slug      string `json:"slug"`
		Confirmed bool   `json:"confirmed"`
	} `json:"city"`
	Candidates []candidate `json:"candidates"`
}

func TestResolveCity(t *testing.T) {
	t.Parallel()
	neustadt := make([]candidate, 0, 10)
	for i := 1; i <= 10; i++ {
		neustadt = append(neustadt, candidate{ID: int64(100 + i), Name: "Neustadt " + string(rune('A'+i-1)), Slug: "neustadt-" + string(rune('a'+i-1))})
	}
	tests := []struct {
		name       string
		query      string
		result     string
		cityID     int64
		confirmed  bool
		candidates []candidate
	}{
		{"byID200Resolved", "id=1", "resolved", 1, true, nil},
		{"byID200UnconfirmedIsReturnedWithFlag", "id=7", "resolved", 7, false, nil},
		{"byID200NotFound", "id=999999", "not_found", 0, false, nil},
		{"byName200Exact", "name=Berlin", "resolved", 1, true, nil},
		{"byName200CaseAndAccentInsensitive", "name=ZURICH", "resolved", 2, true, nil},
		{"byName200AccentedInput", "name=" + escape("Kraków"), "resolved", 8, true, nil},
		{"byName200WhitespaceNormalised", "name=" + escape("  porto   alegre "), "resolved", 5, true, nil},
		{"byName200ExactBeforePrefix", "name=porto", "resolved", 4, true, nil},
		{"byName200SinglePrefix", "name=" + escape("Porto A"), "resolved", 5, true, nil},
		{"byName200SinglePrefixAccentFolded", "name=portim", "resolved", 6, true, nil},
		{"byName200AmbiguousPrefix", "name=Port", "ambiguous", 0, false, []candidate{
			{6, "Portimão", "portimao"}, {4, "Porto", "porto"}, {5, "Porto Alegre", "porto-alegre"}}},
		{"byName200AmbiguousPrefixZu", "name=zu", "ambiguous", 0, false, []candidate{
			{3, "Zug", "zug"}, {2, "Zürich", "zurich"}}},
		{"byName200AmbiguousExact", "name=cordoba", "ambiguous", 0, false, []candidate{
			{10, "Cordoba", "cordoba-argentina"}, {9, "Córdoba", "cordoba"}}},
		{"byName200AmbiguousAtMostTen", "name=neustadt", "ambiguous", 0, false, neustadt},
		{"byName200UnconfirmedNotFound", "name=Paris", "not_found", 0, false, nil},
		{"byName200UnconfirmedPrefixNotFound", "name=Pari", "not_found", 0, false, nil},
		{"byName200NoMatch", "name=Atlantis", "not_found", 0, false, nil},
		{"byName200WildcardIsLiteral", "name=" + escape("%"), "not_found", 0, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, env := get(t, "/internal/cities/resolve?"+tc.query, service)
			if status != http.StatusOK {
				t.Fatalf("status %d, body %+v", status, env)
			}
			var r resolution
			if err := json.Unmarshal(env.Data, &r); err != nil {
				t.Fatal(err)
			}
			if r.Result != tc.result {
				t.Fatalf("result %q, want %q (%s)", r.Result, tc.result, env.Data)
			}
			switch tc.result {
			case "resolved":
				if r.City == nil || r.City.ID != tc.cityID || r.City.Confirmed != tc.confirmed || r.Candidates != nil {
					t.Fatalf("resolution %s, want city %d confirmed=%v", env.Data, tc.cityID, tc.confirmed)
				}
			case "ambiguous":
				if r.City != nil || !reflect.DeepEqual(r.Candidates, tc.candidates) {
					t.Fatalf("candidates %s, want %+v", env.Data, tc.candidates)
				}
			default:
				if string(env.Data) != `{"result":"not_found"}` {
					t.Fatalf("data %s", env.Data)
				}
			}
		})
	}
}

func TestResolveCityShape(t *testing.T) {
	t.Parallel()
	_, env := get(t, "/internal/cities/resolve?id=1", service)
	if want := `{"result":"resolved","city":{"id":1,"name":"Berlin","slug":"berlin","confirmed":true,"latitude":52.520008,"longitude":13.404954,"country_code":"DE"}}`; string(env.Data) != want {
		t.Fatalf("data %s, want %s", env.Data, want)
	}
}

func TestResolveCity422(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		query   string
		details []string
	}{
		{"resolve422Neither", "", []string{"id or name is required"}},
		{"resolve422Both", "?id=1&name=Berlin", []string{"give either id or name, not both"}},
		{"resolve422NonIntegerID", "?id=abc", []string{"id must be a positive integer"}},
		{"resolve422ZeroID", "?id=0", []string{"id must be a positive integer"}},
		{"resolve422NegativeID", "?id=-3", []string{"id must be a positive integer"}},
		{"resolve422OverflowID", "?id=99999999999999999999", []string{"id must be a positive integer"}},
		{"resolve422EmptyName", "?name=", []string{"name must not be empty"}},
		{"resolve422BlankName", "?name=%20%20", []string{"name must not be empty"}},
		{"resolve422LongName", "?name=" + strings.Repeat("a", 201), []string{"name must be at most 200 characters"}},
		{"resolve422ControlName", "?name=Ber%00lin", []string{"name must not contain control characters"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, env := get(t, "/internal/cities/resolve"+tc.query, service)
			if status != http.StatusUnprocessableEntity || env.Error == nil || env.Error.Code != "validation_error" {
				t.Fatalf("status %d, body %+v", status, env)
			}
			if !reflect.DeepEqual(env.Problems(t), tc.details) {
				t.Fatalf("details %q, want %q", env.Problems(t), tc.details)
			}
		})
	}
}

func TestSpaceFacts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		path   string
		status int
		data   string
		code   string
	}{
		{"facts200ConfirmedPro", "/internal/spaces/1", 200,
			`{"id":1,"name":"Spree Loft","slug":"spree-loft","confirmed":true,"is_pro":true,"city_id":1}`, ""},
		{"facts200Unconfirmed", "/internal/spaces/3", 200,
			`{"id":3,"name":"Secret Berlin","slug":"secret-berlin","confirmed":false,"is_pro":true,"city_id":1}`, ""},
		{"facts200InUnconfirmedCity", "/internal/spaces/6", 200,
			`{"id":6,"name":"Montmartre Lab","slug":"montmartre-lab","confirmed":true,"is_pro":false,"city_id":7}`, ""},
		{"facts404Unknown", "/internal/spaces/4242", 404, "", "not_found"},
		{"facts422NotInteger", "/internal/spaces/abc", 422, "", "validation_error"},
		{"facts422Zero", "/internal/spaces/0", 422, "", "validation_error"},
		{"bySlug200", "/internal/spaces/by-slug/spree-loft", 200,
			`{"id":1,"name":"Spree Loft","slug":"spree-loft","confirmed":true,"is_pro":true,"city_id":1}`, ""},
		{"bySlug404Unknown", "/internal/spaces/by-slug/nowhere", 404, "", "not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, env := get(t, tc.path, service)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %+v", status, tc.status, env)
			}
			if tc.code != "" {
				if env.Error == nil || env.Error.Code != tc.code {
					t.Fatalf("error %+v, want %s", env.Error, tc.code)
				}
				return
			}
			if string(env.Data) != tc.data {
				t.Fatalf("data %s, want %s", env.Data, tc.data)
			}
		})
	}
}

func TestCatalog(t *testing.T) {
	t.Parallel()
	status, env := get(t, "/internal/catalog", service)
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	var cat struct {
		Cities []map[string]any `json:"cities"`
		Spaces []map[string]any `json:"spaces"`
	}
	if err := json.Unmarshal(env.Data, &cat); err != nil {
		t.Fatal(err)
	}
	// Everything, confirmed or not, ordered by id.
	if len(cat.Cities) != 25 || len(cat.Spaces) != 6 {
		t.Fatalf("catalog has %d cities, %d spaces; want 25, 6", len(cat.Cities), len(cat.Spaces))
	}
	wantCity := map[string]any{"id": 7.0, "name": "Paris", "slug": "paris", "confirmed": false, "latitude": 48.856613, "longitude": 2.352222, "country_code": "FR"}
	if !reflect.DeepEqual(cat.Cities[6], wantCity) {
		t.Fatalf("city %#v, want %#v", cat.Cities[6], wantCity)
	}
	wantSpace := map[string]any{"id": 3.0, "name": "Secret Berlin", "slug": "secret-berlin", "city_id": 1.0, "confirmed": false, "is_pro": true}
	if !reflect.DeepEqual(cat.Spaces[2], wantSpace) {
		t.Fatalf("space %#v, want %#v", cat.Spaces[2], wantSpace)
	}
}

func TestInternalRequiresService(t *testing.T) {
	t.Parallel()
	paths := []string{"/internal/cities/resolve?id=1", "/internal/spaces/1", "/internal/catalog"}
	callers := []struct {
		name   string
		id     *identity.Identity
		status int
		code   string
	}{
		{"401NoIdentity", nil, 401, "unauthorized"},
		{"403Live", liveKey, 403, "forbidden"},
		{"403Restricted", spaceKey1, 403, "forbidden"},
		{"403Public", &identity.Identity{Kind: identity.KindPublic}, 403, "forbidden"},
	}
	for _, p := range paths {
		for _, c := range callers {
			t.Run(strings.SplitN(p, "?", 2)[0]+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				status, env := get(t, p, c.id)
				if status != c.status || env.Error == nil || env.Error.Code != c.code {
					t.Fatalf("status %d, body %+v; want %d %s", status, env, c.status, c.code)
				}
			})
		}
	}
}
