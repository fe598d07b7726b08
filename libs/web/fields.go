package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
)

// maxUnknown bounds the unknown fields a 422 names one by one, so that a body
// of many made-up keys does not turn into an answer larger than itself.
const maxUnknown = 20

// Fields is a request body (a JSON object, or a web form) read field by
// field. Each reader takes one field; a value of the wrong type is a problem
// naming the field, and reading goes on, so that one 422 lists every problem.
// A field that no reader asked for and Ignore does not name is a problem too
// (`unknown field "x"`): the document's request schemas refuse additional
// properties, and a misspelt optional field would otherwise vanish unnoticed.
//
// A JSON body is decoded into Fields by DecodeJSON (Fields implements
// json.Unmarshaler); DecodeJSONOrForm reads either kind. Every string it
// returns is the caller's own copy.
type Fields struct {
	json     map[string]json.RawMessage
	form     *fiber.Ctx // a form body is read from here; nil for JSON
	keys     []string   // the form's field names
	asked    map[string]bool
	bad      map[string]bool
	problems []string
}

// UnmarshalJSON takes a JSON object's fields as they are; their types are
// checked when they are read.
func (f *Fields) UnmarshalJSON(b []byte) error { return f.decode(b) }

// decode takes the fields of the JSON object b.
func (f *Fields) decode(b []byte) error {
	m := make(map[string]json.RawMessage, 16)
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*f = Fields{json: m, asked: make(map[string]bool, len(m))}
	return nil
}

// DecodeJSONOrForm reads the body as JSON (application/json or +json; also
// when no Content-Type is sent, as no browser does) or as a form
// (application/x-www-form-urlencoded, multipart/form-data). Bad JSON is a
// 400 and another media type a 415, as with DecodeJSON.
func DecodeJSONOrForm(c *fiber.Ctx) (*Fields, error) {
	ct := c.Get(fiber.HeaderContentType)
	mt := ""
	if ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			return nil, NewError(http.StatusUnsupportedMediaType, "Content-Type is malformed; send application/json or application/x-www-form-urlencoded")
		}
	}
	f := &Fields{}
	switch {
	case mt == fiber.MIMEApplicationForm:
		f.form = c
		c.Request().PostArgs().VisitAll(func(k, _ []byte) { f.keys = append(f.keys, string(k)) })
	case mt == fiber.MIMEMultipartForm:
		form, err := c.MultipartForm()
		if err != nil {
			return nil, BadRequest("Request body is not a valid multipart form")
		}
		f.form = c
		for k := range form.Value {
			f.keys = append(f.keys, k)
		}
		for k := range form.File {
			f.keys = append(f.keys, k)
		}
	case mt == fiber.MIMEApplicationJSON || strings.HasSuffix(mt, "+json"):
		if err := DecodeJSON(c, f); err != nil {
			return nil, err
		}
	case mt == "" && len(c.Body()) > 0:
		if err := DecodeJSONBytes(c.Body(), f); err != nil {
			return nil, err
		}
	case mt == "":
		return nil, BadRequest("Request body is empty; a JSON object or a form is expected")
	default:
		return nil, NewError(http.StatusUnsupportedMediaType,
			"Content-Type "+mt+" is not supported; send application/json or application/x-www-form-urlencoded")
	}
	return f, nil
}

// raw marks name as asked for and returns its JSON value, nil when the field
// is absent or null.
func (f *Fields) raw(name string) json.RawMessage {
	if f.asked == nil {
		f.asked = map[string]bool{}
	}
	f.asked[name] = true
	v := bytes.TrimSpace(f.json[name])
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}

// formValue marks name as asked for and returns its form value, "" when
// absent.
func (f *Fields) formValue(name string) string {
	f.raw(name)
	return strings.Clone(f.form.FormValue(name))
}

// formText is formValue for text, which PostgreSQL must be able to store: a
// form carries raw bytes, so a value that is not valid UTF-8 or holds NUL is
// a problem (a JSON body is checked whole by DecodeJSON).
func (f *Fields) formText(name string) (string, bool) {
	v := f.formValue(name)
	if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
		f.problem(name, name+" must be valid UTF-8 text without NUL characters")
		return "", false
	}
	return v, true
}

// problem records msg about name, once: reading a field again repeats nothing.
func (f *Fields) problem(name, msg string) {
	if f.bad[name] {
		return
	}
	if f.bad == nil {
		f.bad = map[string]bool{}
	}
	f.bad[name] = true
	f.problems = append(f.problems, msg)
}

// JSON returns the JSON value of name as sent (nil when absent), without
// reading it: for a canonical form of the body, not for its values.
func (f *Fields) JSON(name string) json.RawMessage { return f.json[name] }

// String returns a text field, "" when it is absent or null.
func (f *Fields) String(name string) string {
	if v := f.OptString(name); v != nil {
		return *v
	}
	return ""
}

// OptString returns a text field, nil when it is absent or null.
func (f *Fields) OptString(name string) *string {
	if f.form != nil {
		if v, ok := f.formText(name); ok && v != "" {
			return &v
		}
		return nil
	}
	raw := f.raw(name)
	if raw == nil {
		return nil
	}
	s, ok := jsonString(raw)
	if !ok {
		f.problem(name, name+" must be a string")
		return nil
	}
	return &s
}

// jsonString is the string a JSON value holds; one without escapes is
// its bytes between the quotes (the body was checked as JSON whole), which
// saves most of a create's field reading (jobapp BenchmarkCreateRequest).
func jsonString(raw json.RawMessage) (string, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : n-1]), true
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err == nil
}

// LooseString is OptString for a field whose value of another type counts
// as absent rather than a problem (one the rules replace when invalid).
func (f *Fields) LooseString(name string) *string {
	if f.form != nil {
		return f.OptString(name)
	}
	if raw := f.raw(name); raw != nil {
		if s, ok := jsonString(raw); ok {
			return &s
		}
	}
	return nil
}

// OptInt returns an integer field, nil when it is absent or null. A JSON
// number with no fractional part is an integer (5, 5.0 and 5e0 all are to the
// document's `type: integer`); a string, even "5", is refused: the document
// says integer, and a client or proxy that validates against it refuses to
// send one, so the server must not quietly take it. A form's value is decimal
// text.
func (f *Fields) OptInt(name string) *int64 {
	if f.form != nil {
		v, ok := f.formText(name)
		if !ok || v == "" {
			return nil
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			f.problem(name, name+" must be an integer")
			return nil
		}
		return &n
	}
	raw := f.raw(name)
	if raw == nil {
		return nil
	}
	if raw[0] == '"' { // json.Number would take a quoted number
		f.problem(name, name+" must be an integer (a JSON number, not a string)")
		return nil
	}
	if v, err := strconv.ParseInt(string(raw), 10, 64); err == nil { // the usual case, without a decoder
		return &v
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		if v, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return &v
		}
		// 5.0 or 5e0: exact as a float64 below 2^53, which holds every valid
		// id and amount; a larger one is out of every field's range anyway.
		if fl, err := strconv.ParseFloat(string(n), 64); err == nil && fl == math.Trunc(fl) && math.Abs(fl) < 1<<53 {
			v := int64(fl)
			return &v
		}
	}
	f.problem(name, name+" must be an integer")
	return nil
}

// Strings returns a field that is a list of text: a JSON array of strings,
// or a form's repeated values (checkboxes). Absent or null is nil.
func (f *Fields) Strings(name string) []string {
	if f.form != nil {
		f.raw(name)
		var vals [][]byte
		if form, err := f.form.MultipartForm(); err == nil {
			for _, v := range form.Value[name] {
				vals = append(vals, []byte(v))
			}
		} else {
			vals = f.form.Request().PostArgs().PeekMulti(name)
		}
		out := make([]string, 0, len(vals))
		for _, v := range vals {
			if !utf8.Valid(v) || bytes.IndexByte(v, 0) >= 0 {
				f.problem(name, name+" must be valid UTF-8 text without NUL characters")
				return nil
			}
			out = append(out, string(v))
		}
		return out
	}
	raw := f.raw(name)
	if raw == nil {
		return nil
	}
	var out []string
	if err := json.Unmarshal(raw, &out); err != nil {
		f.problem(name, name+" must be an array of strings")
		return nil
	}
	return out
}

// OptIntOrBool is OptInt that also takes true and false as 1 and 0.
func (f *Fields) OptIntOrBool(name string) *int64 {
	if f.form == nil {
		var b bool
		if raw := f.raw(name); raw != nil && json.Unmarshal(raw, &b) == nil {
			v := int64(0)
			if b {
				v = 1
			}
			return &v
		}
	}
	return f.OptInt(name)
}

// Bool returns a boolean field, false when it is absent or null. A form
// takes true/false, on/off, 1/0 and yes/no.
func (f *Fields) Bool(name string) bool {
	if f.form != nil {
		switch strings.ToLower(strings.TrimSpace(f.formValue(name))) {
		case "true", "on", "1", "yes":
			return true
		case "", "false", "off", "0", "no":
			return false
		}
		f.problem(name, name+" must be a boolean")
		return false
	}
	raw := f.raw(name)
	if raw == nil {
		return false
	}
	var v bool
	if err := json.Unmarshal(raw, &v); err != nil {
		f.problem(name, name+" must be a boolean")
		return false
	}
	return v
}

// Ignore accepts names without reading them: fields a client may send that
// have no effect.
func (f *Fields) Ignore(names ...string) {
	for _, n := range names {
		f.raw(n)
	}
}

// Problems returns the type problems in the order the fields were read, then
// one problem per unknown field (in name order), then those of rules (the
// caller's own checks) that are not about a field whose type was wrong
// already: they would say the same thing again. Call it once every field has
// been read.
func (f *Fields) Problems(rules []string) []string {
	out := slices.Clone(f.problems)
	var unknown []string
	for _, k := range f.names() {
		if !f.asked[k] {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	unknown = slices.Compact(unknown)
	for i, k := range unknown {
		if i == maxUnknown {
			out = append(out, fmt.Sprintf("and %d more unknown fields", len(unknown)-maxUnknown))
			break
		}
		out = append(out, "unknown field "+strconv.Quote(k))
	}
	for _, p := range rules {
		field, _, _ := strings.Cut(p, " ")
		if !f.bad[field] {
			out = append(out, p)
		}
	}
	return out
}

// names lists the body's field names.
func (f *Fields) names() []string {
	if f.form != nil {
		return f.keys
	}
	out := make([]string, 0, len(f.json))
	for k := range f.json {
		out = append(out, k)
	}
	return out
}

// Err is nil when Problems(rules) is empty, else the 422 validation_error
// that lists them all.
func (f *Fields) Err(rules []string) error {
	if p := f.Problems(rules); len(p) > 0 {
		return Validation("Validation failed", p)
	}
	return nil
}
