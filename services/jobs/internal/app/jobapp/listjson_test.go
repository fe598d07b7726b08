package jobapp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

const benchBaseURL = "https://coworkjobs.example"

func benchJob() jobbus.Job {
	apply, space := "https://example.com/apply?job=1", "Factory Görlitzer Park"
	salMin, salMax := int64(42000), int64(55000)
	now := time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)
	return jobbus.Job{ID: 123456, Title: "Senior Community Manager (m/w/d)", Company: "Acme Coworking GmbH",
		JobType: "fulltime", Tags: "community,events,hospitality,front desk", IsRemote: false,
		Slug: "senior-community-manager-m-w-d-berlin", ExternalURL: "https://careers.example.com/jobs/1?ref=coworkjobs",
		ApplyURL: &apply, CompanyLogo: "acme.png", DateAdded: now, ExpirationDate: now.Add(30 * 24 * time.Hour),
		CityName: "Berlin", CitySlug: "berlin", SpaceName: &space, SalMin: &salMin, SalMax: &salMax, Currency: "EUR"}
}

// jobEncoder is what appendJob replaces: encoding/json over toJobDTO.
type jobEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

func newJobEncoder() *jobEncoder {
	e := &jobEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}

func (e *jobEncoder) encode(j *jobbus.Job, baseURL string) ([]byte, error) {
	e.buf.Reset()
	if err := e.enc.Encode(toJobDTO(j, baseURL+"/jobs/"+jobbus.PageURL(j.Slug, j.ID))); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")), nil
}

func TestAppendJobIsEncodingJSON(t *testing.T) {
	km := 12.3456
	cases := map[string]func(j *jobbus.Job){
		"full row":        func(j *jobbus.Job) {},
		"nothing set":     func(j *jobbus.Job) { j.ApplyURL, j.SpaceName, j.SalMin, j.SalMax = nil, nil, nil, nil },
		"near a point":    func(j *jobbus.Job) { j.DistanceKm = &km },
		"HTML unescaped":  func(j *jobbus.Job) { j.Title, j.Company = "<b>Host</b> & co", "A > B < C" },
		"quote, slash":    func(j *jobbus.Job) { j.Title, j.Tags = `say "hi" \ bye`, `a\b` },
		"control":         func(j *jobbus.Job) { j.Title = "a\nb\rc\td\x00e\x1ff\x7f" },
		"line separators": func(j *jobbus.Job) { j.Company = "a\u2028b\u2029c" },
		"invalid UTF-8":   func(j *jobbus.Job) { j.Title, j.Slug = "a\xffb\xc3", "x\xe2\x82" },
		"non-ASCII":       func(j *jobbus.Job) { j.Title, j.CityName = "Gérante d'espace 🌿", "Zürich" },
		"local times": func(j *jobbus.Job) {
			j.DateAdded = j.DateAdded.Add(1500 * time.Millisecond).In(time.FixedZone("CET", 3600))
		},
		"base URL escaped": func(j *jobbus.Job) { j.Slug = `s"l` },
	}
	e := newJobEncoder()
	for name, change := range cases {
		j := benchJob()
		change(&j)
		got := appendJob(nil, &j, benchBaseURL+`/"q"`)
		want, err := e.encode(&j, benchBaseURL+`/"q"`)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\nappendJob     %s\nencoding/json %s", name, got, want)
		}
	}

	// Backspace and form feed: appendJob writes \u0008 and \u000c, as the
	// list always has, encoding/json (since Go 1.22) \b and \f: the same text.
	j := benchJob()
	j.Title = "a\bb\fc"
	var got, want map[string]any
	want1, _ := e.encode(&j, benchBaseURL)
	if err := json.Unmarshal(appendJob(nil, &j, benchBaseURL), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want1, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("backspace and form feed: %v, encoding/json %v", got, want)
	}
}

// BenchmarkAppendJob is one row of GET /v2/jobs, written by hand.
func BenchmarkAppendJob(b *testing.B) {
	j := benchJob()
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendJob(buf[:0], &j, benchBaseURL)
	}
}

// BenchmarkAppendJobStdlib is the same row through encoding/json (one
// encoder reused), what appendJob is measured against.
func BenchmarkAppendJobStdlib(b *testing.B) {
	j := benchJob()
	e := newJobEncoder()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.encode(&j, benchBaseURL); err != nil {
			b.Fatal(err)
		}
	}
}
