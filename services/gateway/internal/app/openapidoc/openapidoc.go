// Package openapidoc serves the API's contract: the OpenAPI document as
// authored (YAML) and as JSON, the reference page that renders it, and the
// page's renderer script.
package openapidoc

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/api"
	"github.com/coworkjobs/coworkjobs/libs/web"
)

// Docs is the contract in both forms, converted once at start, and the
// reference page that renders it. The YAML is served byte for byte as
// authored; the JSON keeps its key order (generated types and the reference
// page follow the order the document was written in).
type Docs struct {
	yaml []byte
	json []byte
	page []byte
	// The renderer, large and seldom asked for, is streamed from the embedded
	// files rather than copied into the heap at start for the life of the
	// process; rendererSize is 0 when `make docs` has not bundled Redoc.
	docs         fs.FS
	rendererSize int64
}

const rendererPath = "docs/redoc.standalone.js"

// Load converts doc (the authored YAML) and reads the reference page from
// docs (api.Docs: docs/index.html and docs/redoc.standalone.js; nil: none).
func Load(doc []byte, docs fs.FS) (Docs, error) {
	j, err := api.JSONFromYAML(doc)
	if err != nil {
		return Docs{}, fmt.Errorf("convert openapi document: %w", err)
	}
	d := Docs{yaml: doc, json: j, docs: docs}
	if docs != nil {
		if d.page, err = fs.ReadFile(docs, "docs/index.html"); err != nil {
			return Docs{}, fmt.Errorf("read reference page: %w", err)
		}
		st, err := fs.Stat(docs, rendererPath)
		switch {
		case err == nil:
			d.rendererSize = st.Size()
		case !errors.Is(err, fs.ErrNotExist):
			return Docs{}, fmt.Errorf("read renderer: %w", err)
		}
	}
	return d, nil
}

// ServeJSON answers GET /v2/openapi.json.
func (d Docs) ServeJSON(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	return c.Send(d.json)
}

// ServeYAML answers GET /v2/openapi.yaml.
func (d Docs) ServeYAML(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "application/yaml; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	return c.Send(d.yaml)
}

// ServeDocs answers GET /v2/docs, the reference page.
func (d Docs) ServeDocs(c *fiber.Ctx) error {
	if d.page == nil || d.rendererSize == 0 {
		return &web.Error{Status: http.StatusServiceUnavailable, Code: web.CodeServiceUnavailable,
			Message: "The reference page was not bundled into this build (make docs); the contract is at /v2/openapi.json"}
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	// The page runs only its own bundled script.
	c.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:")
	return c.Send(d.page)
}

// ServeRenderer answers GET /v2/docs/redoc.standalone.js.
func (d Docs) ServeRenderer(c *fiber.Ctx) error {
	if d.rendererSize == 0 {
		return web.NotFound("Route not found")
	}
	f, err := d.docs.Open(rendererPath)
	if err != nil {
		return fmt.Errorf("open renderer: %w", err)
	}
	c.Set(fiber.HeaderContentType, "text/javascript; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "public, max-age=86400")
	// fasthttp closes the file once the answer is written (or dropped).
	c.Response().SetBodyStream(f, int(d.rendererSize))
	return nil
}

// RedirectDocs sends /v2/docs/ to the reference page: strict routing makes
// the trailing slash another path, and a 404 there looked like no docs at all.
func RedirectDocs(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "public, max-age=86400")
	return c.Redirect("/v2/docs", http.StatusMovedPermanently)
}
