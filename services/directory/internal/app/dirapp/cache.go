package dirapp

import (
	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// maxAge is how long a client may reuse a directory list without asking.
const maxAge = 60

// sendList writes a list with a weak ETag (304 when the client holds it),
// private: it was fetched with an API key, and /v2/spaces depends on the
// key's space.
func sendList(c *fiber.Ctx, data any) error {
	return web.SendCacheablePrivate(c, data, maxAge)
}
