package jobapp

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// eventDTO is what happened in one change.
type eventDTO struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	Version    int64     `json:"version"`
	OccurredAt time.Time `json:"occurred_at"`
}

func toEventDTO(e jobbus.JobEvent) eventDTO {
	return eventDTO{ID: e.ID, Type: e.Type, Version: e.Version, OccurredAt: e.OccurredAt.UTC().Truncate(time.Millisecond)}
}

// changeDTO is one entry of GET /v2/jobs/changes: the job as GET
// /v2/jobs/{id_job} shows it to the caller, or only its id and status for a
// job the caller may no longer read, with the event. The outer id_job and
// status shadow the job's own (equal) ones, so both shapes carry them.
type changeDTO struct {
	*jobDetailDTO
	IDJob  int64    `json:"id_job"`
	Status string   `json:"status"`
	Event  eventDTO `json:"event"`
}

type changesDTO struct {
	Changes    []changeDTO `json:"changes"`
	NextCursor string      `json:"next_cursor"`
}

// changeOf renders one change for who; the owner's links only for a live
// key that owns the job.
func changeOf(bus *jobbus.Business, ce jobbus.ChangeEntry, who jobbus.Caller, live bool) changeDTO {
	out := changeDTO{IDJob: ce.Event.JobID, Status: ce.Status, Event: toEventDTO(ce.Event)}
	if ce.Job != nil {
		d := jobDetail(bus, *ce.Job, live && jobbus.Owns(who, *ce.Job))
		out.jobDetailDTO = &d
	}
	return out
}

// ChangeJSON is one change as GET /v2/jobs/changes renders it, without the
// owner's links (a webhook's body: it leaves for another server, and the
// links carry the job's edit capability).
func ChangeJSON(bus *jobbus.Business, ce jobbus.ChangeEntry, who jobbus.Caller) ([]byte, error) {
	return json.Marshal(changeOf(bus, ce, who, false))
}

// changes answers GET /v2/jobs/changes.
func (h *handlers) changes(c *fiber.Ctx) error {
	q := web.Params(c)
	limit := q.Int("limit", jobbus.DefaultChanges, 1, jobbus.MaxChanges)
	var from jobbus.ChangesFrom
	if since, ok := q.NonEmptyText("since", 200); ok && since != "" {
		if t, err := time.Parse(time.RFC3339Nano, since); err == nil {
			from.Since = t
		} else if cur, ok := DecodeCursor(since); ok {
			from.Cursor = &cur
		} else {
			q.Add("since must be an RFC 3339 date-time (e.g. 2026-11-01T00:00:00Z) or the next_cursor of an earlier page")
		}
	}
	if err := q.Err(); err != nil {
		return err
	}
	who := caller(c)
	page, err := h.bus.Changes(c.UserContext(), who, from, limit)
	if errors.Is(err, jobbus.ErrGone) {
		return web.NewError(http.StatusGone, fmt.Sprintf("Changes older than %d days are no longer kept; resync from GET /v2/jobs, then follow the changes from the time you started", int(jobbus.Retention.Hours()/24)))
	}
	if err != nil {
		return toWebError(err)
	}
	live := identity.From(c).Kind == identity.KindLive
	out := changesDTO{Changes: make([]changeDTO, 0, len(page.Changes)), NextCursor: EncodeCursor(page.Next)}
	for _, ce := range page.Changes {
		out.Changes = append(out.Changes, changeOf(h.bus, ce, who, live))
	}
	return web.OK(c, http.StatusOK, out)
}

// cursorPrefix marks a cursor's format, so a later one can be told apart.
const cursorPrefix = "c1_"

// EncodeCursor is a feed position as clients hold it: opaque, URL-safe.
func EncodeCursor(cur jobbus.Cursor) string {
	raw := strconv.FormatUint(cur.XID, 10) + "." + strconv.FormatInt(cur.Seq, 10) + "." + strconv.FormatInt(cur.At.UnixMilli(), 10)
	return cursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// DecodeCursor reads what EncodeCursor wrote; false for anything else.
func DecodeCursor(s string) (jobbus.Cursor, bool) {
	b64, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok || len(b64) > 100 {
		return jobbus.Cursor{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil {
		return jobbus.Cursor{}, false
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 3 {
		return jobbus.Cursor{}, false
	}
	xid, err1 := strconv.ParseUint(parts[0], 10, 63)
	seq, err2 := strconv.ParseInt(parts[1], 10, 64)
	at, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || seq < 0 {
		return jobbus.Cursor{}, false
	}
	return jobbus.Cursor{XID: xid, Seq: seq, At: time.UnixMilli(at)}, true
}
