package web

import "github.com/gofiber/fiber/v2"

// MethodOther stands for any method outside the standard set (the metric
// label has always been OTHER; OpenTelemetry would say _OTHER).
const MethodOther = "OTHER"

// MethodLabel returns the request's method as one of a fixed set of string
// constants, anything else as MethodOther. Metric labels and span names take
// it, so a client sending PROPFIND or a random token cannot grow their
// cardinality, and the value never points into a request buffer.
func MethodLabel(c *fiber.Ctx) string {
	switch c.Method() {
	case fiber.MethodGet:
		return fiber.MethodGet
	case fiber.MethodHead:
		return fiber.MethodHead
	case fiber.MethodPost:
		return fiber.MethodPost
	case fiber.MethodPut:
		return fiber.MethodPut
	case fiber.MethodPatch:
		return fiber.MethodPatch
	case fiber.MethodDelete:
		return fiber.MethodDelete
	case fiber.MethodOptions:
		return fiber.MethodOptions
	case fiber.MethodConnect:
		return fiber.MethodConnect
	case fiber.MethodTrace:
		return fiber.MethodTrace
	}
	return MethodOther
}
