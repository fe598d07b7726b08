package dashapp

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"

	"github.com/coworkjobs/coworkjobs/api/jobsapi"
)

// SpaceStats reads the daily numbers of a space's jobs (the last days).
func (b *Backends) SpaceStats(ctx context.Context, spaceID int64, days int) (jobsapi.SpaceStats, error) {
	var out jobsapi.SpaceStats
	status, _, err := b.do(ctx, http.MethodGet, b.JobsURL+"/internal/spaces/"+strconv.FormatInt(spaceID, 10)+"/stats?days="+strconv.Itoa(days),
		service(), nil, &out)
	if err != nil {
		return out, err
	}
	if status != http.StatusOK {
		return out, unavailable(fmt.Errorf("stats of space: %d", status))
	}
	return out, nil
}

// jobNumbers is a job's line of numbers on the space's page.
type jobNumbers struct {
	jobsapi.SpaceJobStat
	Chart template.HTML
}

// ChartDays is how many days the dashboard's charts cover.
const ChartDays = 30

// chart draws a job's daily views (a line) and apply clicks (bars) as an
// inline SVG: server-rendered, no script, no style attribute (presentation
// attributes only), so the page's CSP needs nothing more.
func chart(days []jobsapi.DayCount) template.HTML {
	const w, h = 150.0, 32.0
	var peak int64 = 1
	for _, d := range days {
		peak = max(peak, d.Views, d.ApplyClicks)
	}
	n := max(len(days), 1)
	step := w / float64(n)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="Views and apply clicks, the last %d days">`,
		w, h, w, h, n)
	var views, clicks int64
	for _, d := range days {
		views += d.Views
		clicks += d.ApplyClicks
	}
	fmt.Fprintf(&b, `<title>%d views and %d apply clicks in the last %d days (UTC)</title>`, views, clicks, n)
	b.WriteString(`<line x1="0" y1="31.5" x2="150" y2="31.5" stroke="#ccc" stroke-width="1"/>`)
	for i, d := range days {
		if d.ApplyClicks == 0 {
			continue
		}
		bh := float64(d.ApplyClicks) / float64(peak) * (h - 2)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#e08a1e"/>`, float64(i)*step+step*0.2, h-1-bh, step*0.6, bh)
	}
	b.WriteString(`<polyline fill="none" stroke="#2a6ebb" stroke-width="1.5" points="`)
	for i, d := range days {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", float64(i)*step+step/2, h-1-float64(d.Views)/float64(peak)*(h-2))
	}
	b.WriteString(`"/></svg>`)
	return template.HTML(b.String()) //nolint:gosec // G203: numbers we format, no input text
}
