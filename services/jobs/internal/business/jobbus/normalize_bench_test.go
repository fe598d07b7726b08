package jobbus

import (
	"strings"
	"testing"
)

// Inputs shaped like what importers send: a realistic title and company, a
// tag list with case and spacing noise and duplicates, and a description of
// allowed and disallowed HTML about 2 KiB long.
var (
	benchTitle   = "  Senior Community   Manager (Coworking, Hospitality)  "
	benchCompany = "Acme Coworking GmbH"
	benchURL     = "https://Careers.Example.com/jobs/1234?utm_source=feed&ref=other#apply"
	benchTags    = " Community , Events,hospitality,  COMMUNITY , Front Desk,remote   work,events,Sales,  Operations ,café"
	benchDesc    = strings.Repeat(`<h2>About the role</h2><p>You run our <strong>community</strong> of 300 members &amp; `+
		`host <em>events</em>.<br>Apply <a href="https://example.com/apply" onclick="x()">here</a>.</p>`+
		`<ul><li>Onboarding</li><li>Events</li></ul><script>alert(1)</script><div style="x">Benefits</div>`, 6)
)

func BenchmarkFingerprint(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if len(Fingerprint(benchTitle, benchCompany, 1234, benchURL)) != 64 {
			b.Fatal("fingerprint is not 64 hex digits")
		}
	}
}

func BenchmarkNormalizeTags(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if n := len(NormalizeTags(benchTags)); n != 8 {
			b.Fatalf("%d tags, want 8", n)
		}
	}
}

func BenchmarkSanitizeDescription(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchDesc)))
	for b.Loop() {
		if strings.Contains(SanitizeDescription(benchDesc), "<script") {
			b.Fatal("script survived")
		}
	}
}

func BenchmarkSummary(b *testing.B) {
	clean := SanitizeDescription(benchDesc)
	b.ReportAllocs()
	for b.Loop() {
		if Summary(clean, 280) == "" {
			b.Fatal("empty summary")
		}
	}
}

func BenchmarkExternalURL(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := ExternalURL(benchURL); !ok {
			b.Fatal("rejected")
		}
	}
}
