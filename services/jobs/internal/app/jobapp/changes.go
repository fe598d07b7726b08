package jobapp

import (
	"encoding/base64"
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
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobview"
)

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
	// Written by hand (jobview.AppendChange): a page is up to 500 jobs
	// in full detail.
	b := make([]byte, 0, 256+len(page.Changes)*1200)
	b = append(b, `{"success":true,"status":200,"data":{"changes":[`...)
	for i, ce := range page.Changes {
		if i > 0 {
			b = append(b, ',')
		}
		b = jobview.AppendChange(b, h.bus, ce, who, live)
	}
	b = append(b, `],"next_cursor":"`...)
	b = append(b, EncodeCursor(page.Next)...) // URL-safe base64: nothing to escape
	b = append(b, `"}}`...)
	return sendJSON(c, http.StatusOK, b)
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
