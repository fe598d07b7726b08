package feedbackapp_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/feedbackbus"
)

// storable reports whether Postgres can keep s in a text column: valid UTF-8
// without NUL. Anything else fails the INSERT, which would answer a 500.
func storable(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// FuzzFeedbackBody sends POST /v2/feedback bodies (JSON, form or multipart,
// any content type and user agent) through web.DecodeJSONOrForm and the feedback
// rules, as the handler does. Properties: a body is refused only with 400,
// 415 or 422 in the envelope's codes; and whatever the rules accept is
// storable text, so an accepted message can never turn into a 500.
func FuzzFeedbackBody(f *testing.F) {
	f.Add("application/json", []byte(`{"message":"hello","email":"a@b.example","url":"https://e.example/","category":"bug"}`), "curl/8")
	f.Add("application/json", []byte(`{"message":"a\u0000b"}`), "")
	f.Add("application/json", []byte(`{"message":1,"email":[],"category":{}}`), "")
	f.Add("application/x-www-form-urlencoded", []byte("message=hi%ff&category=BUG"), "")
	f.Add("application/x-www-form-urlencoded", []byte("message=a%00b"), "")
	f.Add("multipart/form-data; boundary=X", []byte("--X\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\nhi\r\n--X--\r\n"), "")
	f.Add("text/plain", []byte("message=hi"), "")
	f.Add("", []byte(`{"message":"hi"}`), strings.Repeat("é", 300))
	f.Add("application/json; charset=\"", []byte(`{}`), "\xff")
	app := fiber.New()
	f.Fuzz(func(t *testing.T, contentType string, body []byte, userAgent string) {
		var rc fasthttp.RequestCtx
		rc.Request.Header.SetMethod("POST")
		rc.Request.SetRequestURI("/v2/feedback")
		if contentType != "" {
			rc.Request.Header.SetContentType(contentType)
		}
		rc.Request.Header.SetUserAgent(userAgent)
		rc.Request.SetBody(body)
		c := app.AcquireCtx(&rc)
		defer app.ReleaseCtx(c)
		b, err := web.DecodeJSONOrForm(c)
		if err != nil {
			if e, ok := web.AsError(err); !ok || (e.Status != 400 && e.Status != 415 && e.Status != 422) {
				t.Fatalf("(%q, %q) refused with %v", contentType, body, err)
			}
			return
		}
		in := feedbackbus.Normalize(feedbackbus.NewFeedback{
			Message: b.String("message"), Email: b.String("email"), URL: b.String("url"),
			Category: b.String("category"), UserAgent: c.Get(fiber.HeaderUserAgent),
		})
		if len(b.Problems(feedbackbus.Validate(in))) > 0 {
			return
		}
		for name, v := range map[string]string{"message": in.Message, "email": in.Email, "url": in.URL, "category": in.Category, "user agent": in.UserAgent} {
			if !storable(v) {
				t.Fatalf("accepted %s %q cannot be stored (content type %q, body %q)", name, v, contentType, body)
			}
		}
	})
}
