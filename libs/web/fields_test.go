package web_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// withBody runs fn on a Fiber context for POST / with body sent as
// contentType ("" sends no Content-Type).
func withBody(t *testing.T, contentType, body string, fn func(c *fiber.Ctx)) {
	t.Helper()
	app := fiber.New()
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod(fiber.MethodPost)
	rc.Request.SetRequestURI("/")
	if contentType != "" {
		rc.Request.Header.SetContentType(contentType)
	}
	rc.Request.SetBodyString(body)
	c := app.AcquireCtx(&rc)
	defer app.ReleaseCtx(c)
	fn(c)
}

func ptr[T any](v T) *T { return &v }

func show[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// TestFieldsJSON reads one field of a JSON body with each reader.
func TestFieldsJSON(t *testing.T) {
	str, integer, intOrBool, loose, boolean := "str", "int", "intOrBool", "loose", "bool"
	tests := []struct {
		name    string
		reader  string
		body    string
		want    any // *string, *int64 or bool
		problem string
	}{
		{"string", str, `{"f":"a b"}`, ptr("a b"), ""},
		{"stringEmpty", str, `{"f":""}`, ptr(""), ""},
		{"stringNull", str, `{"f":null}`, (*string)(nil), ""},
		{"stringAbsent", str, `{}`, (*string)(nil), ""},
		{"stringNumber", str, `{"f":1}`, (*string)(nil), "f must be a string"},
		{"stringArray", str, `{"f":["a"]}`, (*string)(nil), "f must be a string"},
		{"looseStringNumberIsAbsent", loose, `{"f":1}`, (*string)(nil), ""},
		{"looseString", loose, `{"f":"a@b.example"}`, ptr("a@b.example"), ""},
		{"int", integer, `{"f":5}`, ptr(int64(5)), ""},
		{"intNegative", integer, `{"f":-5}`, ptr(int64(-5)), ""},
		{"intWithZeroFraction", integer, `{"f":5.0}`, ptr(int64(5)), ""},
		{"intWithExponent", integer, `{"f":5e3}`, ptr(int64(5000)), ""},
		{"intNull", integer, `{"f":null}`, (*int64)(nil), ""},
		{"intFraction", integer, `{"f":1.5}`, (*int64)(nil), "f must be an integer"},
		{"intNumericString", integer, `{"f":"5"}`, (*int64)(nil), "f must be an integer (a JSON number, not a string)"},
		{"intBool", integer, `{"f":true}`, (*int64)(nil), "f must be an integer"},
		{"intTooLarge", integer, `{"f":1e300}`, (*int64)(nil), "f must be an integer"},
		{"intMaxInt64", integer, `{"f":9223372036854775807}`, ptr(int64(9223372036854775807)), ""},
		{"intOrBoolTrue", intOrBool, `{"f":true}`, ptr(int64(1)), ""},
		{"intOrBoolFalse", intOrBool, `{"f":false}`, ptr(int64(0)), ""},
		{"intOrBoolInt", intOrBool, `{"f":1}`, ptr(int64(1)), ""},
		{"intOrBoolString", intOrBool, `{"f":"1"}`, (*int64)(nil), "f must be an integer (a JSON number, not a string)"},
		{"bool", boolean, `{"f":true}`, true, ""},
		{"boolNull", boolean, `{"f":null}`, false, ""},
		{"boolString", boolean, `{"f":"true"}`, false, "f must be a boolean"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f web.Fields
			if err := web.DecodeJSONBytes([]byte(tc.body), &f); err != nil {
				t.Fatal(err)
			}
			var got any
			switch tc.reader {
			case str:
				got = f.OptString("f")
			case loose:
				got = f.LooseString("f")
			case integer:
				got = f.OptInt("f")
			case intOrBool:
				got = f.OptIntOrBool("f")
			case boolean:
				got = f.Bool("f")
			}
			if gs, ws := deref(got), deref(tc.want); gs != ws {
				t.Errorf("%s = %s, want %s", tc.reader, gs, ws)
			}
			var want []string
			if tc.problem != "" {
				want = []string{tc.problem}
			}
			if p := f.Problems(nil); !slices.Equal(p, want) {
				t.Errorf("problems %q, want %q", p, want)
			}
		})
	}
}

func deref(v any) string {
	switch p := v.(type) {
	case *string:
		return show(p)
	case *int64:
		return show(p)
	}
	return fmt.Sprint(v)
}

// TestFieldsProblems covers what Problems adds to the readers' problems:
// unknown fields, and the caller's rules.
func TestFieldsProblems(t *testing.T) {
	many := make([]string, 0, 25)
	for i := range 25 {
		many = append(many, fmt.Sprintf(`"x%02d":1`, i))
	}
	tests := []struct {
		name  string
		body  string
		rules []string
		want  []string
	}{
		{"none", `{"title":"a","n":1}`, nil, nil},
		{"unknownNamed", `{"title":"a","foo":1}`, nil, []string{`unknown field "foo"`}},
		{"unknownInNameOrder", `{"zeta":1,"title":"a","alpha":2}`, nil, []string{`unknown field "alpha"`, `unknown field "zeta"`}},
		{"unknownQuoted", `{"a\"b\u0001":1}`, nil, []string{`unknown field "a\"b\x01"`}},
		{"namesAreCaseSensitive", `{"Title":"a"}`, nil, []string{`unknown field "Title"`}},
		{"ignoredIsNotUnknown", `{"title":"a","status":"active"}`, nil, nil},
		{"typeProblemsFirstThenUnknownThenRules", `{"title":1,"n":"2","foo":1}`, []string{"email is required"},
			[]string{"title must be a string", "n must be an integer (a JSON number, not a string)", `unknown field "foo"`, "email is required"}},
		{"ruleAboutABadFieldDropped", `{"title":1}`, []string{"title is required", "n is required"},
			[]string{"title must be a string", "n is required"}},
		{"manyUnknownCapped", `{` + strings.Join(many, ",") + `}`, nil, func() []string {
			var w []string
			for i := range 20 {
				w = append(w, fmt.Sprintf(`unknown field "x%02d"`, i))
			}
			return append(w, "and 5 more unknown fields")
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f web.Fields
			if err := web.DecodeJSONBytes([]byte(tc.body), &f); err != nil {
				t.Fatal(err)
			}
			f.OptString("title")
			f.OptInt("n")
			f.Ignore("status")
			if got := f.Problems(tc.rules); !slices.Equal(got, tc.want) {
				t.Errorf("problems\n%q\nwant\n%q", got, tc.want)
			}
			err := f.Err(tc.rules)
			if e, ok := web.AsError(err); (err == nil) != (len(tc.want) == 0) || err != nil && (!ok || e.Status != 422 || e.Code != web.CodeValidation) {
				t.Errorf("Err = %v", err)
			}
		})
	}
}

// TestDecodeJSONOrForm reads the same fields from every kind of body.
func TestDecodeJSONOrForm(t *testing.T) {
	const boundary = "X"
	multipart := func(parts ...string) string {
		var b strings.Builder
		for i := 0; i+1 < len(parts); i += 2 {
			fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=%q\r\n\r\n%s\r\n", boundary, parts[i], parts[i+1])
		}
		return b.String() + "--" + boundary + "--\r\n"
	}
	tests := []struct {
		name        string
		contentType string
		body        string
		status      int // of the refusal; 0: read
		msg         string
		consent     bool
		problems    []string
	}{
		{"json", "application/json", `{"msg":"hi","consent":true}`, 0, "hi", true, nil},
		{"jsonSuffix", "application/merge-patch+json", `{"msg":"hi"}`, 0, "hi", false, nil},
		{"jsonWithoutContentType", "", `{"msg":"hi"}`, 0, "hi", false, nil},
		{"jsonUnknownField", "application/json", `{"msg":"hi","name":"x"}`, 0, "hi", false, []string{`unknown field "name"`}},
		{"jsonTypeProblems", "application/json", `{"msg":1,"consent":"yes"}`, 0, "", false, []string{"msg must be a string", "consent must be a boolean"}},
		{"form", "application/x-www-form-urlencoded", "msg=hi+there&consent=on", 0, "hi there", true, nil},
		{"formBooleanWords", "application/x-www-form-urlencoded", "consent=YES", 0, "", true, nil},
		{"formBadBoolean", "application/x-www-form-urlencoded", "consent=maybe", 0, "", false, []string{"consent must be a boolean"}},
		{"formInvalidUTF8", "application/x-www-form-urlencoded", "msg=hi%ff", 0, "", false, []string{"msg must be valid UTF-8 text without NUL characters"}},
		{"formNUL", "application/x-www-form-urlencoded", "msg=a%00b", 0, "", false, []string{"msg must be valid UTF-8 text without NUL characters"}},
		{"formUnknownField", "application/x-www-form-urlencoded", "msg=hi&submit=Send", 0, "hi", false, []string{`unknown field "submit"`}},
		{"multipart", "multipart/form-data; boundary=" + boundary, multipart("msg", "hi", "consent", "true"), 0, "hi", true, nil},
		{"multipartUnknownField", "multipart/form-data; boundary=" + boundary, multipart("msg", "hi", "x", "1"), 0, "hi", false, []string{`unknown field "x"`}},
		{"multipartBroken", "multipart/form-data; boundary=" + boundary, "--X\r\nnot a part", 400, "", false, nil},
		{"emptyWithoutContentType", "", "", 400, "", false, nil},
		{"badJSON", "application/json", `{"msg":`, 400, "", false, nil},
		{"notAnObject", "application/json", `["msg"]`, 400, "", false, nil},
		{"otherMediaType", "text/plain", "msg=hi", 415, "", false, nil},
		{"malformedContentType", "application/json; charset=\"", `{}`, 415, "", false, nil},
		{"jsonInAnotherCharset", "application/json; charset=latin1", `{"msg":"hi"}`, 415, "", false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withBody(t, tc.contentType, tc.body, func(c *fiber.Ctx) {
				f, err := web.DecodeJSONOrForm(c)
				if tc.status != 0 {
					if e, ok := web.AsError(err); !ok || e.Status != tc.status {
						t.Fatalf("err = %v, want %d", err, tc.status)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				msg, consent := f.String("msg"), f.Bool("consent")
				if msg != tc.msg || consent != tc.consent {
					t.Errorf("msg %q consent %v, want %q %v", msg, consent, tc.msg, tc.consent)
				}
				if p := f.Problems(nil); !slices.Equal(p, tc.problems) {
					t.Errorf("problems %q, want %q", p, tc.problems)
				}
			})
		})
	}
}

// A form value is the caller's own: it outlives the request even in an app
// that is not Immutable.
func TestFieldsFormValuesAreCopies(t *testing.T) {
	var msg string
	withBody(t, "application/x-www-form-urlencoded", "msg=hello", func(c *fiber.Ctx) {
		f, err := web.DecodeJSONOrForm(c)
		if err != nil {
			t.Fatal(err)
		}
		msg = f.String("msg")
		c.Request().SetBodyString("msg=XXXXX")
		c.Request().PostArgs().Parse("msg=XXXXX")
	})
	if msg != "hello" {
		t.Fatalf("value changed with the request: %q", msg)
	}
}
