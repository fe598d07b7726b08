package jobview

import (
	"strconv"
	"time"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// AppendChange appends one change of the changes feed, ChangeOf(bus, ce,
// who, live) as encoding/json writes it without HTML escaping
// (TestAppendChangeIsEncodingJSON), written by hand as the feed writes up
// to 500 a page (BenchmarkAppendChange against BenchmarkChangeStdlib).
func AppendChange(b []byte, bus *jobbus.Business, ce jobbus.ChangeEntry, who jobbus.Caller, live bool) []byte {
	b = append(b, '{')
	if d := ce.Job; d != nil {
		l := bus.Links(*d)
		owner := live && jobbus.Owns(who, *d)
		start := len(b)
		b = appendJobFields(b, &d.Job, bus.BaseURL())
		b = append(b[:start], b[start+1:]...) // the first field's comma
		b = appendField(b, "description", d.Description)
		b = append(b, `,"updated_at":"`...)
		b = d.UpdatedAt.UTC().Truncate(time.Second).AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","plan":{"id":`...)
		b = strconv.AppendInt(b, int64(d.Plan.ID), 10)
		b = appendField(b, "name", d.Plan.Name)
		b = append(b, `},"plan_price":`...)
		b = strconv.AppendInt(b, int64(d.Plan.Price), 10)
		b = append(b, `,"is_paid":`...)
		b = strconv.AppendBool(b, d.IsPaid)
		if l.ViewURL != nil {
			b = appendField(b, "view_url", *l.ViewURL)
		} else {
			b = append(b, `,"view_url":null`...)
		}
		if owner {
			b = appendField(b, "edit_url", l.EditURL)
			b = appendField(b, "unpublish_url", l.UnpublishURL)
			if l.PaymentURL != nil {
				b = appendField(b, "payment_url", *l.PaymentURL)
			}
		}
		b = append(b, ',')
	}
	b = append(b, `"id_job":`...)
	b = strconv.AppendInt(b, ce.Event.JobID, 10)
	b = appendField(b, "status", ce.Status)
	b = append(b, `,"event":{"id":"`...)
	b = AppendEscaped(b, ce.Event.ID)
	b = append(b, '"')
	b = appendField(b, "type", ce.Event.Type)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, ce.Event.Version, 10)
	b = append(b, `,"occurred_at":"`...)
	b = ce.Event.OccurredAt.UTC().Truncate(time.Millisecond).AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}}`...)
}

// ChangeJSON is one change as GET /v2/jobs/changes renders it, without the
// owner's links (a webhook's body: it leaves for another server, and the
// links carry the job's edit capability).
func ChangeJSON(bus *jobbus.Business, ce jobbus.ChangeEntry, who jobbus.Caller) ([]byte, error) {
	return AppendChange(make([]byte, 0, 1024), bus, ce, who, false), nil
}
