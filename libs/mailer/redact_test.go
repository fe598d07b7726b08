package mailer_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/mailer"
)

// rejecting is an SMTP server that refuses every recipient, echoing the
// address in its reply as real servers do ("550 5.1.1 <x@y>: ...").
func rejecting(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				r := bufio.NewReader(c)
				write := func(s string) { _, _ = c.Write([]byte(s + "\r\n")) }
				write("220 reject.test ESMTP")
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					cmd := strings.ToUpper(strings.TrimSpace(line))
					switch {
					case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
						write("250 reject.test")
					case strings.HasPrefix(cmd, "MAIL FROM"):
						write("250 ok")
					case strings.HasPrefix(cmd, "RCPT TO"):
						addr := strings.TrimSpace(line[len("RCPT TO:"):])
						write("550 5.1.1 " + addr + ": Recipient address rejected: User unknown in " + strings.ToUpper(addr))
					case strings.HasPrefix(cmd, "QUIT"):
						write("221 bye")
						return
					default:
						write("250 ok")
					}
				}
			}(c)
		}
	}()
	return ln.Addr().String()
}

// An SMTP error names no recipient: the relays log it and keep it in their
// outbox rows (docs/privacy.md).
func TestSendErrorNamesNoRecipient(t *testing.T) {
	s, err := mailer.New("smtp://"+rejecting(t), "coworkjobs <jobs@coworkjobs.example>")
	if err != nil {
		t.Fatal(err)
	}
	to := "Mia.Secret@Example.com"
	err = s.Send(context.Background(), mailer.Message{To: to, Subject: "x", Text: "x"})
	if err == nil {
		t.Fatal("a refused recipient sent")
	}
	if text := strings.ToLower(err.Error()); strings.Contains(text, "mia.secret") || !strings.Contains(text, "<recipient>") {
		t.Fatalf("the error names the recipient or hides nothing: %v", err)
	}
	// the wrapped error (errors.Is/As still reach it) is go-mail's, which names it
	if inner := errors.Unwrap(err); inner == nil || !strings.Contains(strings.ToLower(inner.Error()), "mia.secret") {
		t.Fatalf("the server's reply did not name the address, so this test proves nothing: %v", inner)
	}
}
