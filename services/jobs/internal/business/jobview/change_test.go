package jobview

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// changeStdlib is what AppendChange replaces: encoding/json without HTML
// escaping, as the list's AppendJob is measured.
func changeStdlib(bus *jobbus.Business, ce jobbus.ChangeEntry, who jobbus.Caller, live bool) []byte {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(ChangeOf(bus, ce, who, live)); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func changeFixture() (*jobbus.Business, jobbus.ChangeEntry, jobbus.Caller) {
	bus := jobbus.New(jobbus.Stores{}, nil, jobbus.Config{PublicBaseURL: `https://coworkjobs.example/"q"`})
	apply, ref, space := "https://apply.example/?a=1&b=<2>", "ref \"7\"\u2028", "Space \\ Name"
	min, max := int64(1000), int64(2000)
	d := &jobbus.Detail{Job: jobbus.Job{ID: 42, Title: "Host <b>\"community\"</b>\x01", Company: "Fac\ttory é", JobType: "fulltime",
		Tags: "a,b", IsRemote: true, Slug: "host-community", ExternalURL: "https://x.example", ApplyURL: &apply,
		CompanyLogo: "", DateAdded: time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600)),
		ExpirationDate: time.Date(2026, 2, 2, 3, 4, 5, 0, time.UTC), CityName: "Berlin", CitySlug: "berlin", SpaceName: &space,
		SalMin: &min, SalMax: &max, Currency: "EUR", SalaryPeriod: "year", WorkplaceType: "hybrid", ExternalRef: &ref,
		Description: "<p>Host\n</p>\xff", UpdatedAt: time.Date(2026, 1, 3, 3, 4, 5, 999, time.UTC)}, Status: "active",
		HashIdentifier: "abc", SpaceID: 7, KeyID: 1, Version: 3}
	d.Plan.ID, d.Plan.Name, d.Plan.Price = 5, "Free \"plan\"", 0
	ce := jobbus.ChangeEntry{Event: jobbus.JobEvent{ID: "0b7c-uuid", JobID: 42, Type: "job.paused", Version: 3,
		OccurredAt: time.Date(2026, 1, 3, 3, 4, 5, 123456789, time.UTC)}, Job: d, Status: "active"}
	return bus, ce, jobbus.Caller{SpaceID: 7, KeyID: 1}
}

func TestAppendChangeIsEncodingJSON(t *testing.T) {
	bus, ce, who := changeFixture()
	noJob := ce
	noJob.Job, noJob.Status = nil, "closed"
	noRef := *ce.Job
	noRef.ApplyURL, noRef.SpaceName, noRef.ExternalRef, noRef.SalMin, noRef.Status = nil, nil, nil, nil, "paused"
	other := ce
	other.Job = &noRef
	for name, c := range map[string]struct {
		ce   jobbus.ChangeEntry
		live bool
	}{"owner, live": {ce, true}, "owner, read-only": {ce, false}, "no job": {noJob, true}, "nulls": {other, true}} {
		got, want := AppendChange(nil, bus, c.ce, who, c.live), changeStdlib(bus, c.ce, who, c.live)
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\nAppendChange  %s\nencoding/json %s", name, got, want)
		}
	}
}

func BenchmarkAppendChange(b *testing.B) {
	bus, ce, who := changeFixture()
	var buf []byte
	for b.Loop() {
		buf = AppendChange(buf[:0], bus, ce, who, true)
	}
}

func BenchmarkChangeStdlib(b *testing.B) {
	bus, ce, who := changeFixture()
	for b.Loop() {
		changeStdlib(bus, ce, who, true)
	}
}
