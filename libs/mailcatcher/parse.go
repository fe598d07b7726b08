package mailcatcher

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"os"
	"strings"
)

// Mail is a caught message, decoded for reading.
type Mail struct {
	Path    string
	To      string // envelope recipients
	Header  mail.Header
	Subject string
	Text    string // the text/plain body, transfer-decoded
}

// Read parses a caught .eml file.
func Read(path string) (*Mail, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	msg, err := mail.ReadMessage(f)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	dec := new(mime.WordDecoder)
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		subject = msg.Header.Get("Subject")
	}
	m := &Mail{Path: path, To: msg.Header.Get("X-Mailcatcher-To"), Header: msg.Header, Subject: subject}
	text, err := textPart(msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body)
	if err != nil {
		return nil, fmt.Errorf("body of %s: %w", path, err)
	}
	m.Text = text
	return m, nil
}

func textPart(contentType, encoding string, body io.Reader) (string, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = "text/plain"
	}
	if strings.HasPrefix(mt, "multipart/") {
		r := multipart.NewReader(body, params["boundary"])
		for {
			p, err := r.NextRawPart()
			if errors.Is(err, io.EOF) {
				return "", nil
			}
			if err != nil {
				return "", err
			}
			text, err := textPart(p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p)
			if err != nil || text != "" {
				return text, err
			}
		}
	}
	if mt != "text/plain" {
		return "", nil
	}
	if strings.EqualFold(encoding, "quoted-printable") {
		body = quotedprintable.NewReader(body)
	}
	b, err := io.ReadAll(body)
	return string(b), err
}

// For returns the caught mails whose envelope recipient is addr, oldest first.
func For(dir, addr string) ([]*Mail, error) {
	paths, err := Messages(dir)
	if err != nil {
		return nil, err
	}
	var out []*Mail
	for _, p := range paths {
		m, err := Read(p)
		if err != nil {
			return nil, err
		}
		if strings.EqualFold(m.To, addr) {
			out = append(out, m)
		}
	}
	return out, nil
}
