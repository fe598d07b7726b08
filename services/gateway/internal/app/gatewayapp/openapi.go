package gatewayapp

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/api"
	"github.com/coworkjobs/coworkjobs/libs/web"
)

// openapiDocs is the contract in both forms, converted once at start, and the
// reference page that renders it. The YAML is served byte for byte as
// authored; the JSON keeps its key order (generated types and the reference
// page follow the order the document was written in).
type openapiDocs struct {
	yaml []byte
	json []byte
	page []byte
	// The renderer (940 KB) is streamed from the embedded files when asked
	// for, rather than copied into the heap at start for the life of the
	// process; rendererSize is 0 when `make docs` has not bundled Redoc.
	docs         fs.FS
	rendererSize int64
}

const rendererPath = "docs/redoc.standalone.js"

func loadOpenAPI(doc []byte, docs fs.FS) (openapiDocs, error) {
	j, err := api.JSONFromYAML(doc)
	if err != nil {
		return openapiDocs{}, fmt.Errorf("convert openapi document: %w", err)
	}
	d := openapiDocs{yaml: doc, json: j, docs: docs}
	if docs != nil {
		if d.page, err = fs.ReadFile(docs, "docs/index.html"); err != nil {
			return openapiDocs{}, fmt.Errorf("read reference page: %w", err)
		}
		st, err := fs.Stat(docs, rendererPath)
		switch {
		case err == nil:
			d.rendererSize = st.Size()
		case !errors.Is(err, fs.ErrNotExist):
			return openapiDocs{}, fmt.Errorf("read renderer: %w", err)
		}
	}
	return d, nil
}

func (d openapiDocs) serveJSON(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	return c.Send(d.json)
}

func (d openapiDocs) serveYAML(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "application/yaml; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	return c.Send(d.yaml)
}

func (d openapiDocs) serveDocs(c *fiber.Ctx) error {
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

func (d openapiDocs) serveRenderer(c *fiber.Ctx) error {
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

// redirectDocs sends /v2/docs/ to the reference page: strict routing makes
// the trailing slash another path, and a 404 there looked like no docs at all.
func redirectDocs(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "public, max-age=86400")
	return c.Redirect("/v2/docs", http.StatusMovedPermanently)
}
