// Package mailer sends mail over SMTP with github.com/wneessen/go-mail.
package mailer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	mail "github.com/wneessen/go-mail"
)

// Message is one mail to send.
type Message struct {
	To      string
	Subject string
	Text    string
	HTML    string // optional alternative
	// ListUnsubscribe, when set, adds List-Unsubscribe and the one-click
	// List-Unsubscribe-Post header (RFC 8058).
	ListUnsubscribe string
}

// Sender sends messages.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// SMTP is a Sender for one SMTP server.
type SMTP struct {
	host    string
	port    int
	from    string
	user    string
	pass    string
	tls     mail.TLSPolicy
	timeout time.Duration
}

// New parses rawURL: smtp://[user:pass@]host:port sends in the clear (a local
// catcher), smtps://... and smtp+starttls://... require TLS.
func New(rawURL, from string) (*SMTP, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse SMTP_URL: %w", err)
	}
	s := &SMTP{from: from, timeout: 10 * time.Second}
	defPort := "25"
	switch u.Scheme {
	case "smtp":
		s.tls = mail.NoTLS
	case "smtp+starttls":
		s.tls, defPort = mail.TLSMandatory, "587"
	case "smtps":
		s.tls, defPort = mail.TLSMandatory, "465"
	default:
		return nil, errors.New("SMTP_URL must start with smtp://, smtp+starttls:// or smtps://")
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Host, defPort
	}
	if host == "" {
		return nil, errors.New("SMTP_URL has no host")
	}
	s.host = host
	if s.port, err = strconv.Atoi(port); err != nil || s.port < 1 || s.port > 65535 {
		return nil, errors.New("SMTP_URL has an invalid port")
	}
	if u.User != nil {
		s.user = u.User.Username()
		s.pass, _ = u.User.Password()
	}
	if u.Scheme == "smtps" {
		s.tls = mail.TLSMandatory
	}
	msg := mail.NewMsg()
	if err := msg.From(from); err != nil {
		return nil, fmt.Errorf("MAIL_FROM: %w", err)
	}
	return s, nil
}

// Send delivers m in its own connection.
func (s *SMTP) Send(ctx context.Context, m Message) error {
	msg := mail.NewMsg()
	if err := msg.From(s.from); err != nil {
		return fmt.Errorf("from: %w", err)
	}
	if err := msg.To(m.To); err != nil {
		return redact(fmt.Errorf("to: %w", err), m.To)
	}
	msg.Subject(m.Subject)
	msg.SetMessageID()
	msg.SetDate()
	msg.SetBodyString(mail.TypeTextPlain, m.Text)
	if m.HTML != "" {
		msg.AddAlternativeString(mail.TypeTextHTML, m.HTML)
	}
	if m.ListUnsubscribe != "" {
		msg.SetGenHeader(mail.HeaderListUnsubscribe, "<"+m.ListUnsubscribe+">")
		msg.SetGenHeader(mail.HeaderListUnsubscribePost, "List-Unsubscribe=One-Click")
	}
	opts := []mail.Option{mail.WithPort(s.port), mail.WithTimeout(s.timeout), mail.WithTLSPortPolicy(s.tls)}
	if s.tls == mail.NoTLS {
		opts = []mail.Option{mail.WithPort(s.port), mail.WithTimeout(s.timeout), mail.WithTLSPolicy(mail.NoTLS)}
	}
	if s.user != "" {
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthAutoDiscover), mail.WithUsername(s.user), mail.WithPassword(s.pass))
	}
	client, err := mail.NewClient(s.host, opts...)
	if err != nil {
		return fmt.Errorf("smtp client: %w", err)
	}
	if err := client.DialAndSendWithContext(ctx, msg); err != nil {
		return redact(fmt.Errorf("send mail: %w", err), m.To)
	}
	return nil
}

// redacted is an error whose text names no recipient: go-mail's SendError
// lists the "affected recipient(s)" and servers echo the address in their
// replies, and the callers log the error and keep it in their outbox rows,
// where an address must never be (docs/privacy.md).
type redacted struct {
	err  error
	text string
}

func (e *redacted) Error() string { return e.text }
func (e *redacted) Unwrap() error { return e.err }

func redact(err error, to string) error {
	to = strings.TrimSpace(to)
	if to == "" {
		return err
	}
	text := err.Error()
	// case-insensitive: a server may echo the address in its own case
	for i := strings.Index(strings.ToLower(text), strings.ToLower(to)); i >= 0; i = strings.Index(strings.ToLower(text), strings.ToLower(to)) {
		if i+len(to) > len(text) { // lower-casing changed the length (non-ASCII): the plain pass below
			break
		}
		text = text[:i] + "<recipient>" + text[i+len(to):]
	}
	text = strings.ReplaceAll(text, to, "<recipient>")
	return &redacted{err: err, text: text}
}
