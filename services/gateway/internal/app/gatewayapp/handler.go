package gatewayapp

import (
	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/auth"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/mid"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/proxy"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/responsecache"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/routes"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/ratelimit"
)

// handler is a request's way through the rooms: the key and its scopes
// (auth), the budget it spends (budget), the 304 decided from the change
// versions (responsecache), the budget's check, then the answer: from the
// cache, from the gateway itself (local, nil otherwise), or from the backend
// (proxy), kept by the cache on the way back.
func (a *App) handler(r routes.Route, local fiber.Handler) fiber.Handler {
	var backend *proxy.Backend
	if local == nil {
		backend = a.cfg.Backends[r.Backend]
	}
	h := func(c *fiber.Ctx) error {
		var key *keybus.Key // nil on public routes
		if !r.Public() || (r.KeyScopes != nil && auth.Presented(c)) {
			var err error
			if key, err = a.auth.Authenticate(c, r); err != nil {
				return err
			}
		}
		id := auth.Identity(c, key)
		budgetName, limit := a.budgets.For(c, r, key)
		// A cacheable GET is named before its budget is counted: a client
		// whose copy is current gets a 304 that costs it no budget (as
		// GitHub does) and the backends nothing.
		var named *responsecache.Request
		if a.cache != nil && r.Cache != nil {
			if named = a.cache.Lookup(c, r, id); named != nil && named.NotModified() {
				return nil
			}
		}
		spent := budgetName != ""
		var decision ratelimit.Decision
		if spent {
			if decision = a.budgets.Spend(c.UserContext(), r, budgetName, limit, a.budgets.Cost(c, r)); !decision.Allowed {
				return a.budgets.Exceeded(c, r, decision)
			}
		}
		var err error
		switch {
		case named != nil && a.cache.Serve(c, r, named):
		case local != nil:
			err = local(c)
		default:
			var whole *proxy.Whole
			if named != nil && c.Method() == fiber.MethodGet {
				whole = &proxy.Whole{Max: a.cache.MaxEntry(), Take: a.cache.TakeWhole(named)}
			}
			err = backend.Forward(c, a.cfg.Codec, id, r.Page, whole)
			// Internal: whether the answer came from a replica.
			replica := len(c.Response().Header.Peek(web.HeaderReadReplica)) > 0
			c.Response().Header.Del(web.HeaderReadReplica)
			if named != nil && err == nil {
				a.cache.Store(c, r, named, replica)
			}
		}
		if spent {
			// After forwarding: the backend's response replaced ours.
			a.budgets.SetHeaders(c, r.Limit, decision)
		}
		return err
	}
	if r.Page {
		return mid.HTMLErrors(a.cfg.Log, h)
	}
	return h
}
