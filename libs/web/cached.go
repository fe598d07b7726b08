package web

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// SendCacheable writes a 200 envelope with a weak ETag over its bytes and a
// public Cache-Control, and answers 304 with no body when the client already
// holds that version (If-None-Match). The public feeds use it.
func SendCacheable(c *fiber.Ctx, data any, maxAgeSeconds int) error {
	return sendCacheable(c, data, "public, max-age="+strconv.Itoa(maxAgeSeconds))
}

// SendCacheablePrivate is SendCacheable for an answer fetched with an API
// key (and possibly depending on the key's space): no shared cache may hand
// it to anyone else.
func SendCacheablePrivate(c *fiber.Ctx, data any, maxAgeSeconds int) error {
	return sendCacheable(c, data, "private, max-age="+strconv.Itoa(maxAgeSeconds))
}

func sendCacheable(c *fiber.Ctx, data any, cacheControl string) error {
	body, err := json.Marshal(Envelope{Success: true, Status: http.StatusOK, Data: data})
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	h := fnv.New64a()
	_, _ = h.Write(body)
	etag := `W/"` + strconv.FormatUint(h.Sum64(), 36) + `"`
	c.Set(fiber.HeaderETag, etag)
	c.Set(fiber.HeaderCacheControl, cacheControl)
	c.Set(fiber.HeaderVary, "Accept-Encoding")
	if ETagMatches(c.Get(fiber.HeaderIfNoneMatch), etag) {
		return c.SendStatus(http.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(http.StatusOK).Send(body)
}

// ETagMatches implements the weak comparison of If-None-Match (RFC 9110
// 13.1.2): the backends' hashed ETags and the gateway's named ones use it.
func ETagMatches(header, etag string) bool {
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
