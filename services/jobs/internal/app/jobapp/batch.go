package jobapp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// batchRequest is the body of POST /v2/jobs/batch: jobs, each a create
// request, and the batch's own fields.
type batchRequest struct{ web.Fields }

// batchRowDTO is one result of a batch.
type batchRowDTO struct {
	Index       *int     `json:"index"` // null for a job replace closed
	ExternalRef string   `json:"external_ref"`
	Action      string   `json:"action"`
	JobID       *int64   `json:"job_id"`
	Status      *string  `json:"status"`
	Errors      []string `json:"errors,omitempty"`
}

// batchDTO is a batch's answer.
type batchDTO struct {
	Mode    string         `json:"mode"`
	DryRun  bool           `json:"dry_run"`
	Counts  map[string]int `json:"counts"`
	Results []batchRowDTO  `json:"results"`
}

func toBatchDTO(r jobbus.BatchResult) batchDTO {
	out := batchDTO{Mode: r.Mode, DryRun: r.DryRun, Counts: r.Counts(), Results: make([]batchRowDTO, len(r.Results))}
	for i, row := range r.Results {
		d := batchRowDTO{ExternalRef: row.ExternalRef, Action: row.Action, Errors: row.Errors}
		if row.Index >= 0 {
			idx := row.Index
			d.Index = &idx
		}
		if row.JobID != 0 {
			id := row.JobID
			d.JobID = &id
		}
		if row.Status != "" {
			st := row.Status
			d.Status = &st
		}
		out.Results[i] = d
	}
	return out
}

// batchOpDTO is a batch kept as an operation: the 202 of its POST (no
// counts or results yet) and GET /v2/jobs/batch/{operation_id}.
type batchOpDTO struct {
	OperationID string          `json:"operation_id"`
	Status      string          `json:"status"`
	Mode        string          `json:"mode"`
	DryRun      bool            `json:"dry_run"`
	Rows        int             `json:"rows"`
	Processed   int             `json:"processed"`
	URL         string          `json:"url"`
	Counts      *map[string]int `json:"counts,omitempty"`
	Results     []batchRowDTO   `json:"results,omitempty"`
}

func toBatchOpDTO(r jobbus.BatchResult, processed int, withResults bool) batchOpDTO {
	out := batchOpDTO{OperationID: r.OperationID, Status: r.Status, Mode: r.Mode, DryRun: r.DryRun, Rows: r.Rows, Processed: processed,
		URL: "/v2/jobs/batch/" + r.OperationID}
	if withResults {
		d := toBatchDTO(r)
		out.Counts, out.Results = &d.Counts, d.Results
	}
	return out
}

// renderBatch is a batch's answer: 200, each row saying what happened to
// it; or 202 with the operation that will apply it.
func renderBatch(r jobbus.BatchResult) (int, []byte, error) {
	if r.OperationID != "" {
		b, err := json.Marshal(web.Envelope{Success: true, Status: http.StatusAccepted, Data: toBatchOpDTO(r, 0, false)})
		if err != nil {
			return 0, nil, fmt.Errorf("render batch: %w", err)
		}
		return http.StatusAccepted, b, nil
	}
	b, err := json.Marshal(web.Envelope{Success: true, Status: http.StatusOK, Data: toBatchDTO(r)})
	if err != nil {
		return 0, nil, fmt.Errorf("render batch: %w", err)
	}
	return http.StatusOK, b, nil
}

// batch answers POST /v2/jobs/batch.
func (h *handlers) batch(c *fiber.Ctx) error {
	idem, err := idempotencyOf(c)
	if err != nil {
		return err
	}
	var req batchRequest
	if err := web.DecodeJSON(c, &req); err != nil {
		return err
	}
	in := jobbus.BatchInput{DryRun: req.Bool("dry_run"), ConfirmEmpty: req.Bool("confirm_empty")}
	if m := req.OptString("mode"); m != nil {
		in.Mode = *m
	}
	raw := req.JSON("jobs")
	req.Ignore("jobs")
	var rows []json.RawMessage
	switch {
	case len(raw) == 0 || string(raw) == "null":
		in.Problems = append(in.Problems, "jobs is required: an array of jobs, each a POST /v2/jobs body with its external_ref")
	case json.Unmarshal(raw, &rows) != nil:
		in.Problems = append(in.Problems, "jobs must be an array of objects")
	}
	in.Problems = append(in.Problems, req.Problems(nil)...)
	canonical := bytes.NewBufferString(`{"confirm_empty":` + strconv.FormatBool(in.ConfirmEmpty) +
		`,"dry_run":` + strconv.FormatBool(in.DryRun) + `,"mode":` + strconv.Quote(in.Mode) + `,"jobs":[`)
	if len(rows) <= jobbus.MaxBatchAsyncRows {
		in.Rows = make([]jobbus.CreateInput, len(rows))
		for i, row := range rows {
			var r createRequest
			if len(bytes.TrimSpace(row)) == 0 || bytes.TrimSpace(row)[0] != '{' || json.Unmarshal(row, &r) != nil {
				in.Rows[i] = jobbus.CreateInput{TypeProblems: []string{"the job must be a JSON object"}}
				canonical.Write(row)
			} else {
				in.Rows[i] = r.toInput()
				b, err := r.MarshalJSON()
				if err != nil {
					return web.BadRequest("Request body is not valid JSON")
				}
				canonical.Write(b)
			}
			canonical.WriteByte(',')
		}
	} else {
		in.Rows = make([]jobbus.CreateInput, len(rows)) // refused by its length
	}
	if idem != nil {
		sum := sha256.Sum256(canonical.Bytes())
		idem.RequestHash = "batch:" + hex.EncodeToString(sum[:])
	}
	res, reply, err := h.bus.Batch(c.UserContext(), caller(c), in, idem, renderBatch)
	if err != nil {
		return toWebError(err)
	}
	if reply != nil && reply.Replayed {
		h.writes.inc("replayed")
		c.Set(HeaderReplayed, "true")
		return sendJSON(c, reply.Status, reply.Body)
	}
	if !res.DryRun && res.OperationID == "" {
		for _, row := range res.Results {
			h.writes.inc(row.Action)
		}
	}
	if reply != nil {
		return sendJSON(c, reply.Status, reply.Body)
	}
	status, body, err := renderBatch(res)
	if err != nil {
		return err
	}
	return sendJSON(c, status, body)
}

// batchOperation answers GET /v2/jobs/batch/{operation_id}: the operation's
// progress; its counts and results once it is done.
func (h *handlers) batchOperation(c *fiber.Ctx) error {
	op, err := h.bus.BatchOperation(c.UserContext(), caller(c), c.Params("operation_id"))
	if err != nil {
		if errors.Is(err, jobbus.ErrNotFound) {
			return web.NotFound("Batch operation not found")
		}
		return toWebError(err)
	}
	return web.OK(c, http.StatusOK, toBatchOpDTO(op.Result(), op.NextRow, op.Status == jobbus.BatchDone))
}

// idempotencyOf reads the Idempotency-Key header (nil when none), refusing
// a key that is too long or not printable text.
func idempotencyOf(c *fiber.Ctx) (*jobbus.Idempotency, error) {
	key := c.Get(HeaderIdempotencyKey)
	if key == "" {
		return nil, nil
	}
	if p := checkIdempotencyKey(key); p != "" {
		return nil, web.Validation("Validation failed", []string{p})
	}
	return &jobbus.Idempotency{KeyID: identity.From(c).KeyID, Key: key}, nil
}
