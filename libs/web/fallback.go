package web

import (
	"net/http"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"
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
	s.App.Use(func(c *fiber.Ctx) error {
		if a, ok := allow[c.Path()]; ok {
			c.Set(fiber.HeaderAllow, a)
			return &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
				Message: "Method " + c.Method() + " is not allowed on " + c.Path() + "; allowed: " + a}
		}
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "Route not found"}
	})
}
