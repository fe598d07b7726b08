// Package payload reads a request body that may be JSON or a web form, field
// by field, collecting every type problem instead of stopping at the first.
package payload

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// Body is a parsed request body.
type Body struct {
	c        *fiber.Ctx
	form     bool
	fields   map[string]json.RawMessage
	problems []string
	bad      map[string]bool
}

// Parse reads the body as JSON (application/json) or as a form
// (application/x-www-form-urlencoded, multipart/form-data). Bad JSON is a 400;
// another media type is a 415.
func Parse(c *fiber.Ctx) (*Body, error) {
	ct := c.Get(fiber.HeaderContentType)
	mt := ""
	if ct != "" {
		var err error
		mt, _, err = mime.ParseMediaType(ct)
		if err != nil {
			return nil, web.NewError(http.StatusUnsupportedMediaType, "Content-Type is malformed; send application/json or application/x-www-form-urlencoded")
		}
	}
	b := &Body{c: c, bad: map[string]bool{}}
	switch {
	case mt == fiber.MIMEApplicationForm || mt == fiber.MIMEMultipartForm:
		b.form = true
		if mt == fiber.MIMEMultipartForm {
			if _, err := c.MultipartForm(); err != nil {
				return nil, web.BadRequest("Request body is not a valid multipart form")
			}
		}
	case mt == fiber.MIMEApplicationJSON || strings.HasSuffix(mt, "+json") || (mt == "" && len(c.Body()) > 0):
		// Without a Content-Type the body is read as JSON (a browser always
		// names one); a declared one must be JSON in UTF-8 (web.DecodeJSON).
		decode := web.DecodeJSON
		if mt == "" {
			decode = func(c *fiber.Ctx, dst any) error { return web.DecodeJSONBytes(c.Body(), dst) }
		}
		if err := decode(c, &b.fields); err != nil {
			return nil, err
		}
	case mt == "":
		return nil, web.BadRequest("Request body is empty; a JSON object or a form is expected")
	default:
		return nil, web.NewError(http.StatusUnsupportedMediaType,
			"Content-Type "+mt+" is not supported; send application/json or application/x-www-form-urlencoded")
	}
	return b, nil
}

func (b *Body) problem(name, msg string) {
	b.problems = append(b.problems, msg)
	b.bad[name] = true
}

// String returns a text field ("" when absent or null). A form value is
// raw bytes, so one that is not valid UTF-8 or holds NUL is a problem (JSON
// bodies are checked by web.DecodeJSON): PostgreSQL would refuse to store it.
func (b *Body) String(name string) string {
	if b.form {
		v := b.c.FormValue(name)
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			b.problem(name, name+" must be valid UTF-8 text without NUL characters")
			return ""
		}
		return v
	}
	raw, ok := b.fields[name]
	if !ok || string(raw) == "null" {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		b.problem(name, name+" must be a string")
		return ""
	}
	return s
}

// Bool returns a boolean field (false when absent). A form accepts true/false,
// on/off, 1/0, yes/no.
func (b *Body) Bool(name string) bool {
	if b.form {
		switch strings.ToLower(strings.TrimSpace(b.c.FormValue(name))) {
		case "true", "on", "1", "yes":
			return true
		case "", "false", "off", "0", "no":
			return false
		}
		b.problem(name, name+" must be a boolean")
		return false
	}
	raw, ok := b.fields[name]
	if !ok || string(raw) == "null" {
		return false
	}
	var v bool
	if err := json.Unmarshal(raw, &v); err != nil {
		b.problem(name, name+" must be a boolean")
		return false
	}
	return v
}

// Problems merges the type problems with rule problems; a rule problem about a
// field that already has a type problem is dropped (it would say the same).
func (b *Body) Problems(rules []string) []string {
	out := append([]string{}, b.problems...)
	for _, p := range rules {
		field, _, _ := strings.Cut(p, " ")
		if !b.bad[field] {
			out = append(out, p)
		}
	}
	return out
}
