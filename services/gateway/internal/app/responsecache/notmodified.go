package responsecache

import (
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/routes"
)

// Lookup names the request and answers 304 when the client holds the answer
// of that name (Request.NotModified); nil when the versions are unavailable
// (the request is then forwarded as if nothing were cached). It runs before
// the request's budget is counted: a client whose copy is current gets a 304
// that costs it no budget and the backends nothing.
func (rc *Cache) Lookup(c *fiber.Ctx, r routes.Route, id identity.Identity) *Request {
	inm := c.Get(fiber.HeaderIfNoneMatch)
	// The versions say what the current answer is called, not whether there
	// is one this key may read (a job that does not exist, another space's
	// draft): * is left to the backend.
	n := &Request{anyETag: strings.TrimSpace(inm) == "*"}
	// Only a GET the cache may answer from its entry (without a validator,
	// or with *) reads it with the versions: a 304 from the versions needs
	// no body.
	if !rc.name(c.UserContext(), c, r, id, n, (inm == "" || n.anyETag) && c.Method() == fiber.MethodGet) {
		rc.outcomes.WithLabelValues(r.Path, outcomeUnversioned).Inc()
		return nil
	}
	if !n.anyETag && web.ETagMatches(inm, n.etag) {
		rc.outcomes.WithLabelValues(r.Path, outcomeNotModified).Inc()
		setValidators(c, r, n.etag)
		c.Status(fiber.StatusNotModified)
		n.notModified = true
	}
	return n
}

// notModifiedIfAny answers a 200 to If-None-Match: * as a 304, without its
// body (a stream is closed unread, and its backend connection with it), its
// framing and type, or the backend's status text.
func notModifiedIfAny(resp *fasthttp.Response, n *Request) {
	if !n.anyETag || resp.StatusCode() != fiber.StatusOK {
		return
	}
	resp.SetStatusCode(fiber.StatusNotModified)
	resp.Header.SetStatusMessage(nil)
	resp.ResetBody()
	resp.Header.Del(fiber.HeaderContentLength)
	resp.Header.Del(fiber.HeaderTransferEncoding)
	resp.Header.Del(fiber.HeaderContentType)
}

// cacheControl is what clients may do with a named answer: keep it and ask
// again each time (no-cache), the 304 costing them no budget; a keyed answer
// only in the client's own cache.
func cacheControl(r routes.Route) string {
	if r.Public() {
		return "public, no-cache"
	}
	return "private, no-cache"
}

// setValidators names the answer. A forwarded answer keeps its backend's
// header names as sent (Etag, as fasthttp writes ETag), so each header is
// replaced whatever its case: one validator per answer.
func setValidators(c *fiber.Ctx, r routes.Route, etag string) {
	h := &c.Response().Header
	replaceHeader(h, fiber.HeaderETag, etag)
	replaceHeader(h, fiber.HeaderCacheControl, cacheControl(r))
	if !r.Public() {
		// A browser holding answers of two keys must not mix them up.
		replaceHeader(h, fiber.HeaderVary, "X-API-Key, Authorization")
	}
}

// replaceHeader sets name to value after deleting every header of that name
// in any case.
func replaceHeader(h *fasthttp.ResponseHeader, name, value string) {
	var other [][]byte
	h.VisitAll(func(k, _ []byte) {
		if len(k) == len(name) && string(k) != name && asciiEqualFold(k, name) {
			other = append(other, append([]byte(nil), k...))
		}
	})
	for _, k := range other {
		h.DelBytes(k)
	}
	h.Set(name, value)
}

// asciiEqualFold is strings.EqualFold for header names of len(name) bytes,
// without copying k into a string.
func asciiEqualFold(k []byte, name string) bool {
	lower := func(c byte) byte {
		if 'A' <= c && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	for i := range k {
		if lower(k[i]) != lower(name[i]) {
			return false
		}
	}
	return true
}
