// Package api carries the OpenAPI 3.1 contract so the gateway can serve it and
// tests can validate responses against it; the YAML file is the source of truth.
package api

import (
	"embed"
	_ "embed"
)

// OpenAPIYAML is api/openapi.yaml as written.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte

// Docs holds the reference page (docs/index.html) and, once `make docs` has
// copied it from the npm package, the Redoc renderer (docs/redoc.standalone.js).
//
//go:embed all:docs
var Docs embed.FS
