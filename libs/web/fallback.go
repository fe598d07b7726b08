package web

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Fallback must be registered after every route: it answers an unknown path
// with 404 not_found and a known path with the wrong method with 405
// method_not_allowed plus the Allow header that Fiber's own 405 leaves out.
func (s *Server) Fallback() {
	allowed := map[string][]string{}
	for _, r := range s.App.GetRoutes(true) {
		if strings.Contains(r.Path, "*") || r.Method == fiber.MethodConnect || r.Method == fiber.MethodTrace {
			continue
		}
		allowed[r.Path] = append(allowed[r.Path], r.Method)
	}
	var allow allowTable
	allow.exact = make(map[string]string, len(allowed))
	for p, ms := range allowed {
		sort.Strings(ms)
		a := strings.Join(ms, ", ")
		if strings.Contains(p, ":") {
			allow.params = append(allow.params, paramRoute{segs: strings.Split(p, "/"), allow: a})
			continue
		}
		allow.exact[p] = a
	}
	s.unknownMethods(allow)
	s.App.Use(func(c *fiber.Ctx) error {
		if a, ok := allow.lookup(c.Path()); ok {
			c.Set(fiber.HeaderAllow, a)
			return &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
				Message: "Method " + c.Method() + " is not allowed on " + c.Path() + "; allowed: " + a}
		}
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "Route not found"}
	})
}

// allowTable is the Allow header of each known path: exact paths, then
// routes with parameters (/v2/jobs/:id_job<int>), matched segment by segment.
type allowTable struct {
	exact  map[string]string
	params []paramRoute
}

type paramRoute struct {
	segs  []string
	allow string
}

func (t allowTable) lookup(path string) (string, bool) {
	if a, ok := t.exact[path]; ok {
		return a, true
	}
	segs := strings.Split(path, "/")
	for _, r := range t.params {
		if matchSegs(r.segs, segs) {
			return r.allow, true
		}
	}
	return "", false
}

// matchSegs matches a path against a route's segments: a literal segment
// exactly, a parameter any non-empty segment, and one with the <int>
// constraint (the only one the services use) what Fiber's constraint takes:
// an int that strconv.Atoi reads.
func matchSegs(route, path []string) bool {
	if len(route) != len(path) {
		return false
	}
	for i, r := range route {
		switch {
		case !strings.HasPrefix(r, ":"):
			if r != path[i] {
				return false
			}
		case path[i] == "":
			return false
		case strings.HasSuffix(r, "<int>"):
			if _, err := strconv.Atoi(path[i]); err != nil {
				return false
			}
		}
	}
	return true
}

// unknownMethods answers a method Fiber does not know (FOO, PROPFIND, ...):
// Fiber itself replies with a plain-text 400 before any middleware or the
// error handler runs, which would break the promise that every answer is
// the envelope. 405 method_not_allowed is the spec's code for "HTTP method
// not supported on the endpoint"; Allow is set where the path is known.
func (s *Server) unknownMethods(allow allowTable) {
	known := make(map[string]bool, len(fiber.DefaultMethods))
	for _, m := range s.App.Config().RequestMethods {
		known[m] = true
	}
	next := s.App.Server().Handler
	s.App.Server().Handler = func(rc *fasthttp.RequestCtx) {
		if known[string(rc.Method())] {
			next(rc)
			return
		}
		if a, ok := allow.lookup(string(rc.Path())); ok {
			rc.Response.Header.Set(fiber.HeaderAllow, a)
		}
		body, _ := json.Marshal(Envelope{Status: http.StatusMethodNotAllowed, Error: &ErrorBody{
			Code: CodeMethodNotAllowed, Message: "HTTP method not supported"}})
		rc.SetStatusCode(http.StatusMethodNotAllowed)
		rc.SetContentType(fiber.MIMEApplicationJSONCharsetUTF8)
		rc.SetBody(body)
	}
}
