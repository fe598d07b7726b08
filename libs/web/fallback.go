package web

import (
	"encoding/json"
	"net/http"
	"sort"
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
		if strings.ContainsAny(r.Path, ":*") || r.Method == fiber.MethodConnect || r.Method == fiber.MethodTrace {
			continue
		}
		allowed[r.Path] = append(allowed[r.Path], r.Method)
	}
	allow := make(map[string]string, len(allowed))
	for p, ms := range allowed {
		sort.Strings(ms)
		allow[p] = strings.Join(ms, ", ")
	}
	s.unknownMethods(allow)
	s.App.Use(func(c *fiber.Ctx) error {
		if a, ok := allow[c.Path()]; ok {
			c.Set(fiber.HeaderAllow, a)
			return &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
				Message: "Method " + c.Method() + " is not allowed on " + c.Path() + "; allowed: " + a}
		}
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "Route not found"}
	})
}

// unknownMethods answers a method Fiber does not know (FOO, PROPFIND, ...):
// Fiber itself replies with a plain-text 400 before any middleware or the
// error handler runs, which would break the promise that every answer is
// the envelope. 405 method_not_allowed is the spec's code for "HTTP method
// not supported on the endpoint"; Allow is set where the path is known.
func (s *Server) unknownMethods(allow map[string]string) {
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
		if a, ok := allow[string(rc.Path())]; ok {
			rc.Response.Header.Set(fiber.HeaderAllow, a)
		}
		body, _ := json.Marshal(Envelope{Status: http.StatusMethodNotAllowed, Error: &ErrorBody{
			Code: CodeMethodNotAllowed, Message: "HTTP method not supported"}})
		rc.SetStatusCode(http.StatusMethodNotAllowed)
		rc.SetContentType(fiber.MIMEApplicationJSONCharsetUTF8)
		rc.SetBody(body)
	}
}
