package tests

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/geo"
	"github.com/coworkjobs/coworkjobs/libs/identity"
)

func names(objs []map[string]any, key string) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i], _ = o[key].(string)
	}
	return out
}

func neustadts() []string {
	var out []string
	for c := 'A'; c <= 'L'; c++ {
		out = append(out, "Neustadt "+string(c))
	}
	return out
}

func TestCities(t *testing.T) {
	t.Parallel()
	all := append(append([]string{"Barcelona", "Berlin", "Cordoba", "Córdoba", "Kraków", "München"}, neustadts()...),
		"Portimão", "Porto", "Porto Alegre", "Zug", "Zürich")
	tests := []struct {
		name  string
		query string
		want  []string
	}{
		{"list200ConfirmedOnlySortedByFoldedName", "", all},
		{"list200ExactSlug", "?q=berlin", []string{"Berlin"}},
		{"list200SlugIsCaseInsensitive", "?q=BERLIN", []string{"Berlin"}},
		{"list200SlugIsExactNotPartial", "?q=berl", []string{}},
		{"list200SlugOfUnconfirmedCityIsEmpty", "?q=paris", []string{}},
		{"list200UnknownSlugIsEmpty", "?q=atlantis", []string{}},
		{"list200SearchPlainLettersFindAccents", "?search=zur", []string{"Zürich"}},
		{"list200SearchWithAccentsFindsPlain", "?search=C%C3%B3rdoba", []string{"Cordoba", "Córdoba"}},
		{"list200SearchIsCaseInsensitive", "?search=" + escape("ZÜR"), []string{"Zürich"}},
		{"list200SearchIsPartialInside", "?search=rak", []string{"Kraków"}},
		{"list200SearchSeveral", "?search=port", []string{"Portimão", "Porto", "Porto Alegre"}},
		{"list200SearchAccentedTerm", "?search=portim%C3%A3o", []string{"Portimão"}},
		{"list200SearchSkipsUnconfirmed", "?search=paris", []string{}},
		{"list200SearchWildcardsAreLiteral", "?search=%25", []string{}},
		{"list200SearchUnderscoreIsLiteral", "?search=_", []string{}},
		{"list200SearchTrimmed", "?search=%20zug%20", []string{"Zug"}},
		{"list200SearchAccentsFolded", "?search=munchen", []string{"München"}},
		{"list200SearchOneTypo", "?search=barcelna", []string{"Barcelona"}},
		{"list200SearchTypoInAWord", "?search=alegr%C3%A9", []string{"Porto Alegre"}},
		{"list200SearchTypoInAWordOfTheName", "?search=alegra", []string{"Porto Alegre"}},
		{"list200SearchNoTypoBelowFiveLetters", "?search=zog", []string{}},
		{"list200SearchTwoTyposFromNineLetters", "?search=barzelonna", []string{"Barcelona"}},
		{"list200SearchBestMatchFirst", "?search=porto", []string{"Porto", "Porto Alegre"}},
		{"list200SearchTransliteration", "?search=zuerich", []string{"Zürich"}},
		{"list200SlugAndSearchCombined", "?q=porto-alegre&search=alegre", []string{"Porto Alegre"}},
		{"list200SlugAndSearchDisjoint", "?q=porto&search=alegre", []string{}},
		{"list200EmptyParamsDoNotFilter", "?q=&search=", all},
		{"list200UnknownParamsIgnored", "?api_key=svc_live_x&page=2", all},
		{"list200MaxLengthAccepted", "?search=" + strings.Repeat("a", 200), []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, env := get(t, "/v2/cities"+tc.query, liveKey)
			if status != http.StatusOK || !env.Success {
				t.Fatalf("status %d, body %+v", status, env)
			}
			got := names(objects(t, env), "city_name")
			if !slices.Equal(got, tc.want) {
				t.Fatalf("cities = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCitiesShape(t *testing.T) {
	t.Parallel()
	status, env := get(t, "/v2/cities?q=porto-alegre", liveKey)
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	objs := objects(t, env)
	want := map[string]any{
		"id_city":   "5",
		"city_name": "Porto Alegre",
		"city_slug": "porto-alegre",
		"latitude":  "-30.034647",
		"longitude": "-51.217658",
	}
	if len(objs) != 1 || !reflect.DeepEqual(objs[0], want) {
		t.Fatalf("city = %#v, want %#v", objs, want)
	}
	// Every city: text id that is numeric, decimal-text coordinates.
	_, env = get(t, "/v2/cities", liveKey)
	for _, c := range objects(t, env) {
		assertNumericText(t, c, "id_city", false)
		assertNumericText(t, c, "latitude", true)
		assertNumericText(t, c, "longitude", true)
	}
}

func assertNumericText(t *testing.T, obj map[string]any, key string, decimal bool) {
	t.Helper()
	s, ok := obj[key].(string)
	if !ok {
		t.Fatalf("%s = %#v (%T), want a string", key, obj[key], obj[key])
	}
	if decimal {
		if _, err := strconv.ParseFloat(s, 64); err != nil || !strings.Contains(s, ".") {
			t.Fatalf("%s = %q, want decimal text", key, s)
		}
		return
	}
	if n, err := strconv.ParseInt(s, 10, 64); err != nil || n <= 0 {
		t.Fatalf("%s = %q, want positive integer text", key, s)
	}
}

func TestQueryValidation(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 201)
	tests := []struct {
		name    string
		path    string
		details []string
	}{
		{"cities422SearchTooLong", "/v2/cities?search=" + long, []string{"search must be at most 200 characters"}},
		{"cities422SlugTooLong", "/v2/cities?q=" + long, []string{"q must be at most 200 characters"}},
		{"cities422ControlCharacter", "/v2/cities?search=zu%00r", []string{"search must not contain control characters"}},
		{"cities422Newline", "/v2/cities?q=ber%0Alin", []string{"q must not contain control characters"}},
		{"cities422InvalidUTF8", "/v2/cities?search=%FF", []string{"search must be valid UTF-8 text"}},
		{"cities422Repeated", "/v2/cities?q=berlin&q=zug", []string{"q must be given at most once"}},
		{"cities422AllProblemsAtOnce", "/v2/cities?q=" + long + "&search=a%07b",
			[]string{"q must be at most 200 characters", "search must not contain control characters"}},
		{"cities422LengthCountsCharactersNotBytes", "/v2/cities?search=" + strings.Repeat("%C3%BC", 201),
			[]string{"search must be at most 200 characters"}},
		{"spaces422SlugTooLong", "/v2/spaces?q=" + long, []string{"q must be at most 200 characters"}},
		{"spaces422ControlCharacter", "/v2/spaces?q=%1B", []string{"q must not contain control characters"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, env := get(t, tc.path, liveKey)
			if status != http.StatusUnprocessableEntity || env.Success || env.Error == nil || env.Error.Code != "validation_error" {
				t.Fatalf("status %d, body %+v", status, env)
			}
			if !slices.Equal(env.Problems(t), tc.details) {
				t.Fatalf("details = %q, want %q", env.Problems(t), tc.details)
			}
		})
	}
	t.Run("cities200ExactlyMaxMultibyte", func(t *testing.T) {
		t.Parallel()
		status, _ := get(t, "/v2/cities?search="+strings.Repeat("%C3%BC", 200), liveKey)
		if status != http.StatusOK {
			t.Fatalf("status %d", status)
		}
	})
}

func TestSpaces(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		query string
		id    *identity.Identity
		want  []string
	}{
		{"list200ConfirmedInConfirmedCitiesSortedByName", "", liveKey,
			[]string{"Kreuzberg Hub", "Limmat Works", "Ribeira Studio", "Spree Loft"}},
		{"list200CitySlug", "?q=berlin", liveKey, []string{"Kreuzberg Hub", "Spree Loft"}},
		{"list200CitySlugCaseInsensitive", "?q=Berlin", liveKey, []string{"Kreuzberg Hub", "Spree Loft"}},
		{"list200UnconfirmedCityHidesItsSpaces", "?q=paris", liveKey, []string{}},
		{"list200CityWithoutSpaces", "?q=zug", liveKey, []string{}},
		{"list200UnknownCity", "?q=atlantis", liveKey, []string{}},
		{"list200SpaceKeySeesOnlyItsSpace", "", spaceKey1, []string{"Spree Loft"}},
		{"list200SpaceKeyWithItsCity", "?q=berlin", spaceKey1, []string{"Spree Loft"}},
		{"list200SpaceKeyWithAnotherCity", "?q=zurich", spaceKey1, []string{}},
		{"list200SpaceKeyOfUnconfirmedSpace", "", spaceKey3, []string{}},
		{"list200ServiceIdentityIsNotScoped", "", service,
			[]string{"Kreuzberg Hub", "Limmat Works", "Ribeira Studio", "Spree Loft"}},
		// Alexanderplatz: Spree Loft is 1.4 km away, Kreuzberg Hub 2.4 km.
		{"list200NearestFirst", "?near=52.5219,13.4132&radius_km=5", liveKey, []string{"Spree Loft", "Kreuzberg Hub"}},
		{"list200NearRadiusCuts", "?near=52.5219,13.4132&radius_km=2", liveKey, []string{"Spree Loft"}},
		{"list200NearWithCity", "?near=52.5219,13.4132&radius_km=500&q=zurich", liveKey, []string{}},
		{"list200NearFarAway", "?near=47.37,8.54&radius_km=500", liveKey, []string{"Limmat Works"}},
		{"list200NearSpaceKey", "?near=52.5219,13.4132&radius_km=5", spaceKey1, []string{"Spree Loft"}},
		{"list200NearAntimeridian", "?near=0,179.9&radius_km=500", liveKey, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, env := get(t, "/v2/spaces"+tc.query, tc.id)
			if status != http.StatusOK {
				t.Fatalf("status %d, body %+v", status, env)
			}
			if got := names(objects(t, env), "space_name"); !slices.Equal(got, tc.want) {
				t.Fatalf("spaces = %q, want %q", got, tc.want)
			}
		})
	}
}

// With near= every space carries distance_km, the great-circle distance.
func TestSpacesNearDistance(t *testing.T) {
	t.Parallel()
	status, env := get(t, "/v2/spaces?near=52.5219,13.4132&radius_km=5", liveKey)
	objs := objects(t, env)
	if status != http.StatusOK || len(objs) != 2 {
		t.Fatalf("%d %+v", status, env)
	}
	// The SQL's distance is the Go one's (libs/geo), to the 10 m it is rounded to.
	for i, want := range []float64{geo.DistanceKm(52.5219, 13.4132, 52.511870, 13.424860), geo.DistanceKm(52.5219, 13.4132, 52.501, 13.42)} {
		d, ok := objs[i]["distance_km"].(float64)
		if !ok || math.Abs(d-want) > 0.006 {
			t.Errorf("%s: distance_km %v, want about %v", objs[i]["space_name"], objs[i]["distance_km"], want)
		}
	}
	_, env = get(t, "/v2/spaces", liveKey)
	for _, o := range objects(t, env) {
		if _, ok := o["distance_km"]; ok {
			t.Fatalf("distance_km without near: %v", o)
		}
	}
	for query, problem := range map[string]string{
		"?near=52.52":                    "near must be LAT,LON",
		"?near=52.52,13.4":               "near needs radius_km",
		"?radius_km=5":                   "radius_km needs near",
		"?near=52.52,13.4&radius_km=501": "radius_km must be a number above 0 and at most 500",
		"?near=95,13.4&radius_km=5":      "near must be LAT,LON",
	} {
		status, env := get(t, "/v2/spaces"+query, liveKey)
		if status != http.StatusUnprocessableEntity || env.Error == nil || !slices.ContainsFunc(env.Problems(t), func(d string) bool { return strings.Contains(d, problem) }) {
			t.Errorf("%s: %d %+v, want 422 naming %q", query, status, env.Error, problem)
		}
	}
}

func TestSpacesShape(t *testing.T) {
	t.Parallel()
	_, env := get(t, "/v2/spaces", spaceKey1)
	objs := objects(t, env)
	// Exactly the spec's fields: no ids, flags, admins or photos.
	want := map[string]any{
		"space_name":    "Spree Loft",
		"space_url":     "spree-loft",
		"space_address": "Holzmarktstraße 25, Berlin",
		"latitude":      "52.511870",
		"longitude":     "13.424860",
		"city_name":     "Berlin",
	}
	if len(objs) != 1 || !reflect.DeepEqual(objs[0], want) {
		t.Fatalf("space = %#v, want %#v", objs, want)
	}
	if body := string(env.Data); strings.Contains(body, "owner@") || strings.Contains(body, "img.example.com") {
		t.Fatalf("admins or photos leaked: %s", body)
	}
}

func TestCitySpaces(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		id   *identity.Identity
	}{{"list200AllKey", liveKey}, {"list200SpaceKeyIsNotRestricted", spaceKey1}, {"list200OtherSpaceKey", spaceKey3}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, env := get(t, "/v2/city_spaces?api_key=ignored", tc.id)
			if status != http.StatusOK {
				t.Fatalf("status %d, body %+v", status, env)
			}
			objs := objects(t, env)
			// Grouped by city (sorted by name), then by space name.
			want := []string{"Kreuzberg Hub", "Spree Loft", "Ribeira Studio", "Limmat Works"}
			if got := names(objs, "space_name"); !slices.Equal(got, want) {
				t.Fatalf("spaces = %q, want %q", got, want)
			}
		})
	}
	t.Run("shape200CityCoordinatesAndNullableLinks", func(t *testing.T) {
		t.Parallel()
		_, env := get(t, "/v2/city_spaces", liveKey)
		objs := objects(t, env)
		want := []map[string]any{
			{"id_space": "2", "space_name": "Kreuzberg Hub", "space_url": "kreuzberg-hub", "space_address": "Oranienstraße 1, Berlin",
				"id_city": "1", "city_name": "Berlin", "city_slug": "berlin", "latitude": "52.520008", "longitude": "13.404954",
				"website": nil, "linkedin_url": nil},
			{"id_space": "1", "space_name": "Spree Loft", "space_url": "spree-loft", "space_address": "Holzmarktstraße 25, Berlin",
				"id_city": "1", "city_name": "Berlin", "city_slug": "berlin", "latitude": "52.520008", "longitude": "13.404954",
				"website": "https://spree-loft.example.com", "linkedin_url": "https://www.linkedin.com/company/spree-loft"},
			{"id_space": "5", "space_name": "Ribeira Studio", "space_url": "ribeira-studio", "space_address": "Rua da Ribeira 3, Porto",
				"id_city": "4", "city_name": "Porto", "city_slug": "porto", "latitude": "41.157944", "longitude": "-8.629105",
				"website": nil, "linkedin_url": "https://www.linkedin.com/company/ribeira-studio"},
			{"id_space": "4", "space_name": "Limmat Works", "space_url": "limmat-works", "space_address": "Langstrasse 10, Zürich",
				"id_city": "2", "city_name": "Zürich", "city_slug": "zurich", "latitude": "47.376887", "longitude": "8.541694",
				"website": "https://limmat.example.com", "linkedin_url": nil},
		}
		if !reflect.DeepEqual(objs, want) {
			t.Fatalf("city_spaces =\n%#v\nwant\n%#v", objs, want)
		}
		for _, o := range objs {
			assertNumericText(t, o, "id_space", false)
			assertNumericText(t, o, "id_city", false)
			assertNumericText(t, o, "latitude", true)
		}
	})
}

func TestPublicAuthAndRouting(t *testing.T) {
	t.Parallel()
	expired := func() string {
		// A well-formed header whose signature does not match.
		h, _ := svc.Codec.Sign(*liveKey, time.Minute)
		return h[:len(h)-2] + "xx"
	}
	tests := []struct {
		name   string
		method string
		path   string
		header string
		sign   bool
		status int
		code   string
	}{
		{"cities401NoIdentity", http.MethodGet, "/v2/cities", "", false, 401, "unauthorized"},
		{"spaces401NoIdentity", http.MethodGet, "/v2/spaces", "", false, 401, "unauthorized"},
		{"citySpaces401NoIdentity", http.MethodGet, "/v2/city_spaces", "", false, 401, "unauthorized"},
		{"cities401ForgedIdentity", http.MethodGet, "/v2/cities", expired(), false, 401, "unauthorized"},
		{"cities405Post", http.MethodPost, "/v2/cities", "", true, 405, "method_not_allowed"},
		{"unknown404", http.MethodGet, "/v2/nowhere", "", true, 404, "not_found"},
		{"trailingSlash404", http.MethodGet, "/v2/cities/", "", true, 404, "not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.header != "" {
				req.Header.Set(identity.Header, tc.header)
			}
			if tc.sign {
				h, _ := svc.Codec.Sign(*liveKey, time.Minute)
				req.Header.Set(identity.Header, h)
			}
			status, env := do(t, req)
			if status != tc.status || env.Error == nil || env.Error.Code != tc.code {
				t.Fatalf("status %d, body %+v; want %d %s", status, env, tc.status, tc.code)
			}
		})
	}
}

// escape is url.QueryEscape, kept short for table rows.
func escape(s string) string { return url.QueryEscape(s) }

func TestConditionalGet(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/v2/cities", "/v2/spaces", "/v2/city_spaces"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			send := func(inm string) *http.Response {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				h, _ := svc.Codec.Sign(*liveKey, time.Minute)
				req.Header.Set(identity.Header, h)
				if inm != "" {
					req.Header.Set("If-None-Match", inm)
				}
				resp, err := svc.Server.App.Test(req, -1)
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				if err := checker.CheckServed(req, resp.StatusCode, resp.Header, body); err != nil {
					t.Errorf("contract: %v", err)
				}
				resp.Body = io.NopCloser(bytes.NewReader(body))
				return resp
			}
			first := send("")
			etag := first.Header.Get("ETag")
			if first.StatusCode != 200 || !strings.HasPrefix(etag, `W/"`) {
				t.Fatalf("status %d, etag %q", first.StatusCode, etag)
			}
			if cc := first.Header.Get("Cache-Control"); cc != "private, max-age=60" {
				t.Fatalf("Cache-Control %q", cc)
			}
			second := send(etag)
			body, _ := io.ReadAll(second.Body)
			if second.StatusCode != http.StatusNotModified || len(body) != 0 {
				t.Fatalf("revalidation: status %d, body %q", second.StatusCode, body)
			}
			if stale := send(`W/"other"`); stale.StatusCode != 200 {
				t.Fatalf("stale etag: status %d", stale.StatusCode)
			}
		})
	}
}
