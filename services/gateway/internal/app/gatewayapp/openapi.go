package gatewayapp

import (
	"fmt"

	"github.com/gofiber/fiber/v2"
	"sigs.k8s.io/yaml"
)

// openapiDocs is the contract in both forms, converted once at start.
type openapiDocs struct {
	yaml []byte
	json []byte
}

func loadOpenAPI(doc []byte) (openapiDocs, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return openapiDocs{}, fmt.Errorf("convert openapi document: %w", err)
	}
	return openapiDocs{yaml: doc, json: j}, nil
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
