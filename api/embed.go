// Package api carries the OpenAPI 3.1 contract so the gateway can serve it and
// tests can validate responses against it; the YAML file is the source of truth.
package api

import _ "embed"

// OpenAPIYAML is api/openapi.yaml as written.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte
