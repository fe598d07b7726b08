package dashapp

import (
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/api/jobsapi"
)

// The chart is an SVG of numbers only: no script, no style attribute (the
// dashboard's CSP allows neither inline), one bar per day with clicks and a
// point per day on the views' line.
func TestChartIsPlainSVG(t *testing.T) {
	days := []jobsapi.DayCount{{Day: "2026-03-01", Views: 4, ApplyClicks: 1}, {Day: "2026-03-02"}, {Day: "2026-03-03", Views: 10, ApplyClicks: 3}}
	svg := string(chart(days))
	for _, bad := range []string{"<script", "style=", "on", "href"} {
		if bad == "on" {
			if strings.Contains(svg, " on") {
				t.Errorf("an event attribute in %s", svg)
			}
			continue
		}
		if strings.Contains(svg, bad) {
			t.Errorf("%q in %s", bad, svg)
		}
	}
	if !strings.HasPrefix(svg, "<svg") || strings.Count(svg, "<rect") != 2 || !strings.Contains(svg, "14 views and 4 apply clicks in the last 3 days") {
		t.Errorf("chart: %s", svg)
	}
	if got := strings.Count(svg[strings.Index(svg, `points="`):], ","); got != 3 {
		t.Errorf("%d points on the views' line, want 3: %s", got, svg)
	}
	if empty := string(chart(nil)); !strings.HasPrefix(empty, "<svg") {
		t.Errorf("no days: %s", empty)
	}
}
