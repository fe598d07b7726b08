// Package contract checks HTTP responses against api/openapi.yaml, so that
// every test that talks to the API also proves the document tells the truth.
package contract

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/coworkjobs/coworkjobs/api"
)

// Checker validates responses; safe for concurrent use.
type Checker struct {
	mu sync.Mutex
	v  validator.Validator
}

// New loads the embedded document.
func New() (*Checker, error) {
	doc, err := libopenapi.NewDocument(api.OpenAPIYAML)
	if err != nil {
		return nil, fmt.Errorf("load openapi document: %w", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("build validator: %v", errs)
	}
	if ok, docErrs := v.ValidateDocument(); !ok {
		msgs := make([]string, 0, len(docErrs))
		for _, e := range docErrs {
			msgs = append(msgs, e.Error())
		}
		return nil, fmt.Errorf("openapi document is invalid: %s", strings.Join(msgs, "; "))
	}
	return &Checker{v: v}, nil
}

// Check validates one response to req: its status must be documented for the
// operation and its body must match the documented schema.
func (c *Checker) Check(req *http.Request, status int, header http.Header, body []byte) error {
	resp := &http.Response{
		StatusCode: status,
		Header:     header.Clone(),
		Body:       io.NopCloser(bytes.NewReader(body)),
		Request:    req,
	}
	c.mu.Lock()
	ok, errs := c.v.ValidateHttpResponse(req, resp)
	c.mu.Unlock()
	if ok {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s → %d does not match the OpenAPI document:", req.Method, req.URL.Path, status)
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  - %s", e.Message)
		if e.Reason != "" {
			fmt.Fprintf(&b, ": %s", e.Reason)
		}
		for _, se := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n      %s (at %s)", se.Reason, se.FieldPath)
		}
	}
	fmt.Fprintf(&b, "\n  body: %.400s", body)
	return fmt.Errorf("%s", b.String())
}
