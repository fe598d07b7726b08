package dirapp

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// maxAge is how long a client may reuse a directory list without asking.
const maxAge = 60

// sendList writes a 200 envelope with a weak ETag over its bytes and answers
// 304 with no body when the client already holds that version. Unlike
// web.SendCacheable (for the public feeds) the response is private: it was
// fetched with an API key, and /v2/spaces depends on the key's space, so no
// shared cache may hand it to someone else.
func sendList(c *fiber.Ctx, data any) error {
	body, err := json.Marshal(web.Envelope{Success: true, Status: http.StatusOK, Data: data})
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	h := fnv.New64a()
	_, _ = h.Write(body)
	etag := `W/"` + strconv.FormatUint(h.Sum64(), 36) + `"`
	c.Set(fiber.HeaderETag, etag)
	c.Set(fiber.HeaderCacheControl, "private, max-age="+strconv.Itoa(maxAge))
	if etagMatches(c.Get(fiber.HeaderIfNoneMatch), etag) {
		return c.SendStatus(http.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(http.StatusOK).Send(body)
}

// etagMatches is the weak comparison of If-None-Match (RFC 9110 13.1.2).
func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	if strings.TrimSpace(header) == "*" {
		return true
	}
	want := strings.TrimPrefix(etag, "W/")
	for _, part := range strings.Split(header, ",") {
		if strings.TrimPrefix(strings.TrimSpace(part), "W/") == want {
			return true
		}
	}
	return false
}
