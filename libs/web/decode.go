package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
)

// DecodeJSON reads the request body into dst. A body sent as anything but
// JSON in UTF-8 answers 415 unsupported_media_type; one that is not one JSON
// value 400 bad_request; a field of the wrong type 422 validation_error
// naming the field, since the JSON itself was fine.
func DecodeJSON(c *fiber.Ctx, dst any) error {
	body := c.Body()
	if len(bytes.TrimSpace(body)) > 0 {
		if err := jsonMediaType(c.Get(fiber.HeaderContentType)); err != nil {
			return err
		}
	}
	return DecodeJSONBytes(body, dst)
}

// jsonMediaType accepts application/json or a +json type, in UTF-8. Anything
// else, a missing Content-Type included, is refused rather than guessed: a
// browser sends text/plain across origins without a preflight, and a body
// declared in another charset would be read wrong.
func jsonMediaType(ct string) error {
	if strings.TrimSpace(ct) == "" {
		return NewError(http.StatusUnsupportedMediaType, "Content-Type is missing; send the body as application/json")
	}
	mt, params, err := mime.ParseMediaType(ct)
	switch {
	case err != nil:
		return NewError(http.StatusUnsupportedMediaType, "Content-Type is malformed; send the body as application/json")
	case mt != fiber.MIMEApplicationJSON && !strings.HasSuffix(mt, "+json"):
		return NewError(http.StatusUnsupportedMediaType, "Content-Type "+mt+" is not supported; send the body as application/json")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return NewError(http.StatusUnsupportedMediaType, "charset "+strconv.Quote(cs)+" is not supported; send the body as application/json in UTF-8")
	}
	return nil
}

// DecodeJSONBytes is DecodeJSON for a body already read (fuzz targets use it).
func DecodeJSONBytes(body []byte, dst any) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return BadRequest("Request body is empty; a JSON object is expected")
	}
	if !utf8.Valid(body) {
		return BadRequest("Request body is not valid UTF-8")
	}
	if body[0] != '{' {
		return BadRequest("Request body must be a JSON object")
	}
	// Syntax first, types second: a body that is not one JSON object is a 400
	// even when a field in it also has the wrong type.
	dec := json.NewDecoder(bytes.NewReader(body))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return BadRequest("Request body is not valid JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return BadRequest("Request body must hold exactly one JSON object")
	}
	if fs, ok := dst.(interface{ decode([]byte) error }); ok {
		// Fields (or a type embedding it) straight from raw, checked once
		// above, rather than through json.Unmarshaler, which has raw checked
		// again (jobapp BenchmarkCreateRequest).
		if err := fs.decode(raw); err != nil {
			return BadRequest("Request body is not valid JSON")
		}
	} else if err := json.Unmarshal(raw, dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return Validation("Validation failed", []string{fmt.Sprintf("%s must be a %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()))})
		}
		return BadRequest("Request body is not valid JSON")
	}
	// PostgreSQL refuses NUL in text, so a NUL that reached an INSERT would
	// be a 500; no field of this API can hold one, so it is refused here.
	if bytes.Contains(body, []byte(`\u0000`)) && hasNUL(body) {
		return BadRequest(`Request body contains a NUL character (\u0000), which no field accepts`)
	}
	return nil
}

// hasNUL reports whether a decoded string or key of the JSON body holds NUL.
func hasNUL(body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if s, ok := tok.(string); ok && strings.IndexByte(s, 0) >= 0 {
			return true
		}
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer"
	case "float32", "float64":
		return "number"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	}
	return "value of the documented type"
}
