package web

import "github.com/gofiber/fiber/v2"

// Routes lists the app's routes as "METHOD /path" (middleware mounts left
// out), in registration order: what a test compares with the API document.
func Routes(app *fiber.App) []string {
	var out []string
	for _, r := range app.GetRoutes(true) {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}
