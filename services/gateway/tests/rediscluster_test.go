package tests

import (
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/redisx/redistest"
)

// REDIS_URL may name a Redis Cluster: on a local three-master cluster the
// gateway behaves as on one server. Budgets are shared exactly between
// instances and processes, and no rate-limit script ever fails (a CROSSSLOT
// or MOVED error would send the limiter to its per-instance fallback, which
// logs "redis unavailable" and lets each instance admit the whole budget).
func TestOnARedisCluster(t *testing.T) {
	url := redistest.Cluster(t, 3)
	t.Run("TwoGatewaysShareOneBudget", func(t *testing.T) {
		a, b := twoGatewaysShareOneBudget(t, url)
		for _, g := range []*gateway{a, b} {
			if logs := g.logs.String(); strings.Contains(logs, "redis unavailable") {
				t.Fatalf("the limiter left the cluster:\n%s", logs)
			}
		}
	})
	t.Run("TwoGatewayProcessesShareOneBudget", func(t *testing.T) { twoProcessesShareOneBudget(t, url) })
	t.Run("Health", func(t *testing.T) { health(t, url) })
}
