package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// isObject is the reference answer to "is this body one JSON object without
// NUL in its text?", written with the standard library's validator and
// Unmarshal rather than the decoder DecodeJSONBytes uses, so the two can
// disagree when one is wrong.
func isObject(body []byte) bool {
	b := bytes.TrimSpace(body)
	if len(b) == 0 || b[0] != '{' || !utf8.Valid(b) || !json.Valid(b) {
		return false
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // numbers beyond float64 are still JSON
	if err := dec.Decode(&v); err != nil {
		return false
	}
	return !holdsNUL(v)
}

func holdsNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, 0)
	case []any:
		for _, e := range v {
			if holdsNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, 0) || holdsNUL(e) {
				return true
			}
		}
	}
	return false
}

// FuzzDecodeJSON: DecodeJSONBytes accepts exactly the bodies that are one
// JSON object in valid UTF-8 (surrounded by white space at most) with no NUL
// in a string or key; everything else is a 400 bad_request. Into a typed struct, a well-formed object may
// also be a 422 validation_error naming a field, and nothing else.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, ` {"name":"a","n":1} `, `{"name":`, `[1]`, `"x"`, `null`, `{"n":1}{"n":2}`, `{"n":1} x`,
		"{\"name\":\"\xff\"}", `{"n":"x"}`, `{"n":1e400}`, `{"n":-0}`, `{"name":"a","name":"b"}`,
		`{"tags":["a",1]}`, `{"deep":` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `}`,
		`{"a":"\ud800"}`, `{"a":"\u0000"}`, `{"a\u0000":1}`, `{"a":"\\u0000"}`, `{"a":["x\u0000"]}`, "\ufeff{}", `{"a":1,}`, `{'a':1}`, `{"n":1.5}`, `{"n":9223372036854775808}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var m map[string]json.RawMessage
		err := web.DecodeJSONBytes(body, &m)
		if want := isObject(body); (err == nil) != want {
			t.Fatalf("DecodeJSONBytes(%q) error %v, but is-one-object is %v", body, err, want)
		}
		if err != nil {
			e, ok := web.AsError(err)
			if !ok || e.Status != 400 || e.Code != web.CodeBadRequest || e.Message == "" {
				t.Fatalf("map target: %q answered %#v", body, err)
			}
		}

		var typed struct {
			Name  string            `json:"name"`
			N     int               `json:"n"`
			OK    bool              `json:"ok"`
			Tags  []string          `json:"tags"`
			Inner struct{ X int }   `json:"inner"`
			Extra map[string]string `json:"extra"`
		}
		err = web.DecodeJSONBytes(body, &typed)
		if err == nil {
			if !isObject(body) {
				t.Fatalf("typed target accepted a non-object %q", body)
			}
			return
		}
		e, ok := web.AsError(err)
		switch {
		case !ok:
			t.Fatalf("typed target: uncoded error %v for %q", err, body)
		case e.Status == 400 && e.Code == web.CodeBadRequest:
		case e.Status == 422 && e.Code == web.CodeValidation:
			// The JSON was well formed; only a type was wrong, and it says which.
			details, _ := e.Details.([]string)
			if !isObject(body) || len(details) != 1 || !strings.Contains(details[0], " must be a ") {
				t.Fatalf("422 for %q with details %v", body, e.Details)
			}
		default:
			t.Fatalf("typed target: %q answered %d %s", body, e.Status, e.Code)
		}
	})
}

// FuzzServerEnvelope sends arbitrary methods, paths, content types and bodies
// through a real web.Server (in memory): every answer is the envelope, its
// status matches the HTTP status, and nothing is a 5xx.
func FuzzServerEnvelope(f *testing.F) {
	f.Add(uint8(0), uint8(0), "application/json", []byte(`{"name":"a","n":1}`))
	f.Add(uint8(0), uint8(0), "text/plain", []byte(`{"n":"x"}`))
	f.Add(uint8(1), uint8(0), "", []byte{})
	f.Add(uint8(2), uint8(1), "application/json; charset=\xff", []byte("{\"name\":\"\xff\"}"))
	f.Add(uint8(3), uint8(2), "multipart/form-data; boundary=", []byte(strings.Repeat("[", 2000)))
	f.Add(uint8(0), uint8(3), "application/json", []byte(`{"name":"`+strings.Repeat("a", 2000)+`"}`))
	srv := newServer(f)
	methods := []string{"POST", "GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE"}
	paths := []string{"/echo", "/feed", "/nope", "/echo/", "/livez", "/%2e%2e/echo", "/echo?x=%zz", "//echo"}
	f.Fuzz(func(t *testing.T, m, p uint8, contentType string, body []byte) {
		if len(body) > testConfig().BodyLimitBytes {
			// app.Test reports an oversized body as a client error; the 413
			// envelope is asserted over a real connection in TestErrorsBecomeEnvelopes.
			return
		}
		method, path := methods[int(m)%len(methods)], paths[int(p)%len(paths)]
		req := httptest.NewRequest(method, "http://test"+path, bytes.NewReader(body))
		if contentType != "" && !strings.ContainsAny(contentType, "\r\n\x00") {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := srv.App.Test(req, -1)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s (%q, %q): %d %s", method, path, contentType, body, resp.StatusCode, raw)
		}
		if method == "HEAD" || resp.StatusCode == 304 {
			return
		}
		var env web.Envelope
		if err := json.Unmarshal(raw, &env); err != nil || env.Status != resp.StatusCode || env.Success != (resp.StatusCode < 400) ||
			(env.Success == (env.Error != nil)) {
			t.Fatalf("%s %s: %d is not a consistent envelope: %q", method, path, resp.StatusCode, raw)
		}
	})
}
