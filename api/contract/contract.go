// Package contract checks HTTP responses against api/openapi.yaml, so that
// every test that talks to the API also proves the document tells the truth.
package contract

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/coworkjobs/coworkjobs/api"
)

// Checker validates responses; safe for concurrent use.
type Checker struct {
	mu  sync.Mutex
	v   validator.Validator
	ops []Operation
}

// Operation is one operation of the document.
type Operation struct {
	Method string // upper case
	Path   string // as written, e.g. /v2/jobs
	ID     string // operationId
	// Public operations need no key (`security: []`, or `{}` among the
	// requirements); OptionalKey ones also name the scopes a key sent must hold.
	Public      bool
	OptionalKey bool
	// Scopes are the scopes its security requirements name (any one grants
	// access), sorted and without duplicates.
	Scopes []string
	// Statuses are the documented response codes ("200", "422", ...), sorted.
	Statuses []string
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
	model, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("build openapi model: %w", err)
	}
	return &Checker{v: v, ops: operations(&model.Model)}, nil
}

// MustNew is New for test setup, where a broken document ends the run.
func MustNew() *Checker {
	c, err := New()
	if err != nil {
		panic(err)
	}
	return c
}

func operations(m *v3.Document) []Operation {
	var ops []Operation
	for path, item := range m.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			sec := op.Security
			if sec == nil { // not written on the operation: the document's default applies
				sec = m.Security
			}
			o := Operation{Method: strings.ToUpper(method), Path: path, ID: op.OperationId, Public: len(sec) == 0}
			for _, req := range sec {
				if req.Requirements == nil || req.Requirements.Len() == 0 {
					// `{}` among the requirements: a key is optional
					o.Public, o.OptionalKey = true, len(sec) > 1
					continue
				}
				for _, scopes := range req.Requirements.FromOldest() {
					o.Scopes = append(o.Scopes, scopes...)
				}
			}
			slices.Sort(o.Scopes)
			o.Scopes = slices.Compact(o.Scopes)
			if op.Responses != nil && op.Responses.Codes != nil {
				o.Statuses = slices.Sorted(op.Responses.Codes.KeysFromOldest())
			}
			ops = append(ops, o)
		}
	}
	return ops
}

// Operations lists every operation of the document, in document order.
func (c *Checker) Operations() []Operation { return slices.Clone(c.ops) }

// Documented reports whether the document has an operation for method on
// path (a request path; `{name}` segments of the document match any value).
func (c *Checker) Documented(method, path string) bool {
	// A concrete path wins over a template that also matches it (OpenAPI's
	// rule): GET /v2/jobs/unpublish is not GET /v2/jobs/{id_job}.
	concrete := slices.ContainsFunc(c.ops, func(o Operation) bool { return o.Path == path })
	for _, o := range c.ops {
		if o.Method == method && (o.Path == path || !concrete && pathMatches(o.Path, path)) {
			return true
		}
	}
	return false
}

// Undocumented returns the routes ("METHOD /path", Fiber's :param segments
// allowed, with or without a <constraint>) under /v2 that the document does not describe. HEAD is left out:
// it answers as the GET it mirrors.
func (c *Checker) Undocumented(routes []string) []string {
	var missing []string
	for _, r := range routes {
		method, path, _ := strings.Cut(r, " ")
		if method == http.MethodHead || (path != "/v2" && !strings.HasPrefix(path, "/v2/")) {
			continue
		}
		segs := strings.Split(path, "/")
		for i, s := range segs {
			if strings.HasPrefix(s, ":") {
				name, _, _ := strings.Cut(s[1:], "<")
				segs[i] = "{" + name + "}"
			}
		}
		// A route's template is the document's path itself, parameter names too.
		tmpl := strings.Join(segs, "/")
		if !slices.ContainsFunc(c.ops, func(o Operation) bool { return o.Method == method && o.Path == tmpl }) {
			missing = append(missing, r)
		}
	}
	return missing
}

// CheckRoutes fails when routes (see Undocumented) hold no /v2 route at all,
// or one the document does not describe.
func (c *Checker) CheckRoutes(routes []string) error {
	served := slices.ContainsFunc(routes, func(r string) bool {
		_, path, _ := strings.Cut(r, " ")
		return path == "/v2" || strings.HasPrefix(path, "/v2/")
	})
	if !served {
		return fmt.Errorf("no /v2 route among %d routes", len(routes))
	}
	if missing := c.Undocumented(routes); len(missing) > 0 {
		return fmt.Errorf("served but not in api/openapi.yaml: %s", strings.Join(missing, ", "))
	}
	return nil
}

// CheckServed is Check for a backend's answer in the backend's own tests:
// requests the document does not cover (internal routes, probes, HEAD,
// unknown paths) pass, and so does a 401, which a backend gives only to a
// request without the gateway's signed identity; clients get their 401s from
// the gateway, whose tests check them.
func (c *Checker) CheckServed(req *http.Request, status int, header http.Header, body []byte) error {
	if status == http.StatusUnauthorized || !c.Documented(req.Method, req.URL.Path) {
		return nil
	}
	return c.Check(req, status, header, body)
}

func pathMatches(template, path string) bool {
	ts, ps := strings.Split(template, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i, t := range ts {
		param := strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}")
		if (param && ps[i] == "") || (!param && t != ps[i]) {
			return false
		}
	}
	return true
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
