package gatewayapp

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"

	"github.com/gofiber/fiber/v2"
	"sigs.k8s.io/yaml"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// openapiDocs is the contract in both forms, converted once at start, and the
// reference page that renders it.
type openapiDocs struct {
	yaml     []byte
	json     []byte
	page     []byte
	renderer []byte // nil when `make docs` has not bundled Redoc
}

func loadOpenAPI(doc []byte, docs fs.FS) (openapiDocs, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return openapiDocs{}, fmt.Errorf("convert openapi document: %w", err)
	}
	d := openapiDocs{yaml: doc, json: j}
	if docs != nil {
		if d.page, err = fs.ReadFile(docs, "docs/index.html"); err != nil {
			return openapiDocs{}, fmt.Errorf("read reference page: %w", err)
		}
		d.renderer, err = fs.ReadFile(docs, "docs/redoc.standalone.js")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
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
	if d.page == nil || d.renderer == nil {
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
	if d.renderer == nil {
		return web.NotFound("Route not found")
	}
	c.Set(fiber.HeaderContentType, "text/javascript; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "public, max-age=86400")
	return c.Send(d.renderer)
}
