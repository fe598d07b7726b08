package proxy

import (
	"net/http"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// A HEAD relayed through the gateway is a valid HTTP answer for any client
// (Go's refuses "Transfer-Encoding: identity"): a redirect, a page and an
// empty answer alike.
func TestHeadIsRelayedAsHTTP(t *testing.T) {
	t.Parallel()
	backend := fiber.New(fiber.Config{DisableStartupMessage: true})
	backend.Get("/v2/go", func(c *fiber.Ctx) error { return c.Redirect("https://jobs.example/apply", http.StatusFound) })
	backend.Get("/v2/page", func(c *fiber.Ctx) error { return c.SendString("<p>a page</p>") })
	backend.Get("/v2/empty", func(c *fiber.Ctx) error { return c.SendStatus(http.StatusNoContent) })
	b, err := NewBackend("jobs", "http://"+serve(t, backend), BackendOptions{Timeout: 2 * time.Second, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	gw := "http://" + front(t, b)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for path, want := range map[string]int{"/v2/go": 302, "/v2/page": 200, "/v2/empty": 204} {
		for _, method := range []string{"HEAD", "GET"} {
			req, _ := http.NewRequest(method, gw+path, nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("%s %s: %d, want %d", method, path, resp.StatusCode, want)
			}
		}
	}
}
