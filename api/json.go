package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// JSONFromYAML converts a YAML document to compact JSON keeping every
// mapping's keys in the order they were written. Generators (openapi-typescript,
// Redoc) emit types and pages in the document's order, so converting through a
// Go map, which sorts keys, lost the order the contract was authored in.
func JSONFromYAML(doc []byte) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("parse yaml: %w", err)
	}
	var buf bytes.Buffer
	buf.Grow(len(doc))
	if err := writeJSON(&buf, &root, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxDepth bounds recursion through aliases (a document that refers to itself).
const maxDepth = 200

func writeJSON(buf *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("line %d: nested deeper than %d levels", n.Line, maxDepth)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			buf.WriteString("null")
			return nil
		}
		return writeJSON(buf, n.Content[0], depth+1)
	case yaml.AliasNode:
		return writeJSON(buf, n.Alias, depth+1)
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				return fmt.Errorf("line %d: only scalar keys can become JSON (no merge keys)", k.Line)
			}
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k.Value)
			buf.WriteByte(':')
			if err := writeJSON(buf, v, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSON(buf, c, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case yaml.ScalarNode:
		return writeScalar(buf, n)
	}
	return fmt.Errorf("line %d: unexpected YAML node kind %d", n.Line, n.Kind)
}

func writeScalar(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		buf.WriteString("null")
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		buf.WriteString(strconv.FormatBool(b))
	case "!!int", "!!float":
		// A literal that is already a JSON number is kept as written (1.0
		// stays 1.0); other YAML spellings (0x1F, .5, 1_000) are decoded.
		if json.Valid([]byte(n.Value)) {
			buf.WriteString(n.Value)
			return nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("line %d: %s is not a JSON number", n.Line, n.Value)
		}
		buf.Write(b)
	default: // !!str, and !!timestamp or !!binary as the text written
		writeString(buf, n.Value)
	}
	return nil
}

// writeString writes s as a JSON string without HTML escaping: the document's
// examples hold HTML (the reference page), which must read as written.
func writeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // a string always encodes
	buf.Truncate(buf.Len() - 1) // Encode's newline
}
