package jobapp

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/validate"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus"
)

// HeaderIdempotencyKey and HeaderReplayed are the idempotency headers.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderReplayed       = "Idempotent-Replayed"
)

// List query limits.
const (
	MinQueryLen    = jobbus.MinQueryLen
	MaxQueryLen    = jobbus.MaxQueryLen
	DefaultPerPage = 20
	MaxPerPage     = 50
	MaxPage        = 100000
	FeedDefault    = 20
	FeedMax        = 50
	FeedSummaryLen = 280
)

var slugRE = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

type handlers struct {
	cfg    Config
	bus    *jobbus.Business
	log    *slog.Logger
	writes writes
}

func caller(c *fiber.Ctx) jobbus.Caller {
	id := identity.From(c)
	return jobbus.Caller{KeyID: id.KeyID, SpaceID: id.SpaceID, TrustedImporter: id.TrustedImporter}
}

// toWebError maps the business sentinels to envelope errors.
func toWebError(err error) error {
	var ve *validate.Error
	switch {
	case errors.As(err, &ve):
		return web.Validation("Validation failed", ve.Problems)
	case errors.Is(err, jobbus.ErrNotFound):
		return web.NotFound("Job not found")
	case errors.Is(err, jobbus.ErrForbidden):
		return web.Forbidden("This job belongs to another poster; a key changes only its own jobs")
	case errors.Is(err, jobbus.ErrSpaceNotGranted):
		return web.Forbidden("id_space: a key without a space may post into a space only as a trusted importer; post with the space's own key")
	case errors.Is(err, jobbus.ErrSpaceConflict):
		return web.Forbidden("id_space differs from the space of this API key; a space key may only post for its own space")
	case errors.Is(err, jobbus.ErrInFlight):
		return web.Conflict("A request with this Idempotency-Key is still in progress; retry shortly")
	case errors.Is(err, jobbus.ErrIdempotencyMismatch):
		return web.Validation("Validation failed", []string{"Idempotency-Key was already used with a different request body; use a new key for a different request"})
	case errors.Is(err, jobbus.ErrUnannounced):
		// Wrapped with the cause, so that the error handler's log line says
		// why (Redis unreachable, say); the client sees the envelope only.
		return fmt.Errorf("%w: %w", &web.Error{Status: http.StatusServiceUnavailable, Code: web.CodeServiceUnavailable,
			Message: "The write is stored but could not be confirmed; send the same request again"}, err)
	case errors.Is(err, jobbus.ErrDirectoryUnavailable):
		return &web.Error{Status: http.StatusServiceUnavailable, Code: web.CodeServiceUnavailable,
			Message: "The city and space directory is unavailable; retry shortly"}
	}
	return err
}

// impressions returns what counts a job shown to the request's client on
// channel (nothing without Config.Stats); usable after the handler returns.
func (h *handlers) impressions(c *fiber.Ctx, channel string) func(jobID int64) {
	if h.cfg.Stats == nil {
		return func(int64) {}
	}
	agent := statsbus.Classify(c.Get(fiber.HeaderUserAgent))
	return func(jobID int64) { h.cfg.Stats.Impression(agent, channel, jobID) }
}

// parseListQuery validates the filters of GET /v2/jobs; every bad value is
// reported (422), none is silently ignored.
func (h *handlers) parseListQuery(c *fiber.Ctx) (jobbus.ListFilter, int, int, error) {
	f, p := ParseSearch(func(k string) string { return c.Query(k) })
	switch sort := c.Query("sort"); sort {
	case "":
		f.Sort = f.DefaultSort()
	case jobbus.SortRelevance, jobbus.SortNewest:
		f.Sort = sort
	case jobbus.SortDistance:
		if c.Query("near") == "" {
			p = append(p, "sort=distance needs near")
		}
		f.Sort = sort
	default:
		p = append(p, "sort must be one of relevance, newest, distance")
	}
	if v := c.Query("posted_since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			p = append(p, "posted_since must be an RFC 3339 date-time, e.g. 2026-11-01T00:00:00Z")
		}
		f.PostedSince = t
	}
	page, perPage := 1, DefaultPerPage
	if h.cfg.PaginationEnabled {
		q := web.Params(c)
		page = q.Int("page", 1, 1, MaxPage)
		perPage = q.Int("per_page", DefaultPerPage, 1, MaxPerPage)
		p = append(p, q.Problems()...)
		f.Limit, f.Offset = perPage, (page-1)*perPage
	}
	if len(p) > 0 {
		return f, 0, 0, web.Validation("Validation failed", p)
	}
	f.SpaceID = identity.From(c).SpaceID
	return f, page, perPage, nil
}

// parseFilters reads the filters GET /v2/jobs and the jobs feeds share (q,
// tag, job_type, remote, city) into f, and returns their problems.
func parseFilters(c *fiber.Ctx, f *jobbus.ListFilter) []string {
	return parseFiltersOf(func(k string) string { return c.Query(k) }, f)
}

// ParseSearch is jobbus.ParseQuery: the one grammar a listing and a saved
// alert share.
func ParseSearch(get func(string) string) (jobbus.ListFilter, []string) {
	return jobbus.ParseQuery(get)
}

func parseFiltersOf(get func(string) string, f *jobbus.ListFilter) []string {
	return jobbus.ParseFilters(get, f)
}

// list answers GET /v2/jobs. Unpaginated, the rows are streamed to the
// client as they come from Postgres (memory stays flat however many match),
// with data.total written after the last job.
func (h *handlers) list(c *fiber.Ctx) error {
	f, page, perPage, err := h.parseListQuery(c)
	if err != nil {
		return err
	}
	base := h.bus.BaseURL()
	seen := h.impressions(c, statsbus.ChannelAPI(caller(c).KeyID))
	if h.cfg.PaginationEnabled {
		jobs, total, err := h.bus.Page(c.UserContext(), caller(c), f)
		if err != nil {
			return err
		}
		for i := range jobs {
			seen(jobs[i].ID)
		}
		b := make([]byte, 0, 1024+len(jobs)*700)
		b = append(b, `{"success":true,"status":200,"data":{"jobs":[`...)
		for i := range jobs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJob(b, &jobs[i], base)
		}
		pg, _ := json.Marshal(web.NewPagination(total, perPage, (page-1)*perPage, len(jobs)))
		b = append(b, `],"total":`...)
		b = strconv.AppendInt(b, int64(total), 10)
		b = append(b, `,"pagination":`...)
		b = append(b, pg...)
		b = append(b, `}}`...)
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Status(http.StatusOK).Send(b)
	}

	// The stream outlives the handler, so it gets its own deadline instead
	// of the request's (which ends when the handler returns).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.UserContext()), h.cfg.StreamTimeout)
	rows, err := h.bus.List(ctx, caller(c), f)
	if err != nil {
		cancel()
		return err
	}
	var job jobbus.Job
	first := rows.Next()
	if !first {
		rows.Close()
		cancel()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("list jobs: %w", err)
		}
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Status(http.StatusOK).SendString(`{"success":true,"status":200,"data":{"jobs":[],"total":0}}`)
	}
	if err := rows.Scan(&job); err != nil {
		rows.Close()
		cancel()
		return fmt.Errorf("scan job: %w", err)
	}
	log := h.log
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	c.Status(http.StatusOK)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer cancel()
		defer rows.Close()
		b := make([]byte, 0, 32<<10)
		b = append(b, `{"success":true,"status":200,"data":{"jobs":[`...)
		total := 0
		for {
			if total > 0 {
				b = append(b, ',')
			}
			b = appendJob(b, &job, base)
			seen(job.ID)
			total++
			if len(b) >= 28<<10 {
				if _, err := w.Write(b); err != nil {
					return
				}
				if err := w.Flush(); err != nil {
					return // the client went away
				}
				b = b[:0]
			}
			if !rows.Next() {
				break
			}
			if err := rows.Scan(&job); err != nil {
				log.Error("stream jobs: scan", "error", err)
				return // the body stays truncated: invalid JSON tells the client
			}
		}
		if err := rows.Err(); err != nil {
			log.Error("stream jobs", "error", err)
			_, _ = w.Write(b)
			return
		}
		b = append(b, `],"total":`...)
		b = strconv.AppendInt(b, int64(total), 10)
		b = append(b, `}}`...)
		_, _ = w.Write(b)
		_ = w.Flush()
	})
	return nil
}

// create answers POST /v2/jobs.
func (h *handlers) create(c *fiber.Ctx) error {
	idem, err := idempotencyOf(c)
	if err != nil {
		return err
	}
	var req createRequest
	if err := web.DecodeJSON(c, &req); err != nil {
		return err
	}
	if idem != nil {
		canonical, err := req.MarshalJSON() // compact already: the hash of what json.Marshal writes
		if err != nil {
			return web.BadRequest("Request body is not valid JSON")
		}
		sum := sha256.Sum256(canonical)
		idem.RequestHash = hex.EncodeToString(sum[:])
	}

	if idem != nil {
		idem.Render = renderCreated
	}
	res, reply, err := h.bus.Create(c.UserContext(), caller(c), req.toInput(), idem)
	if err != nil {
		return toWebError(err)
	}
	switch {
	case reply == nil:
		_, body, err := renderCreated(res)
		if err != nil {
			return err
		}
		h.writes.inc(res.Action)
		return sendJSON(c, http.StatusCreated, body)
	case reply.Replayed:
		h.writes.inc("replayed")
		c.Set(HeaderReplayed, "true")
	default:
		h.writes.inc(res.Action)
	}
	return sendJSON(c, reply.Status, reply.Body)
}

// checkIdempotencyKey is the problem with an Idempotency-Key, "" for none.
func checkIdempotencyKey(key string) string {
	if utf8.RuneCountInString(key) > jobbus.MaxIdemKeyLen {
		return fmt.Sprintf("Idempotency-Key must be at most %d characters", jobbus.MaxIdemKeyLen)
	}
	// A header carries raw bytes; the key is stored as text, which must be
	// valid UTF-8 (PostgreSQL refuses anything else).
	if !utf8.ValidString(key) || strings.ContainsFunc(key, unicode.IsControl) {
		return "Idempotency-Key must be printable UTF-8 text"
	}
	return ""
}

// renderCreated is a create's answer (jobbus.Idempotency.Render).
func renderCreated(r jobbus.CreateResult) (int, []byte, error) {
	b, err := json.Marshal(web.Envelope{Success: true, Status: http.StatusCreated, Data: toCreateResultDTO(r)})
	if err != nil {
		return 0, nil, fmt.Errorf("render result: %w", err)
	}
	return http.StatusCreated, b, nil
}

func sendJSON(c *fiber.Ctx, status int, body []byte) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(status).Send(body)
}
