package mailer_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/libs/mailer"
)

// startCatcher runs the real SMTP catcher on a loopback port.
func startCatcher(t *testing.T) (addr, dir string) {
	t.Helper()
	dir = t.TempDir()
	c, err := mailcatcher.New(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String(), dir
}

func TestSendDeliversOverSMTP(t *testing.T) {
	t.Parallel()
	addr, dir := startCatcher(t)
	s, err := mailer.New("smtp://"+addr, "coworkjobs <newsletter@coworkjobs.example>")
	if err != nil {
		t.Fatal(err)
	}
	link := "https://coworkjobs.example/v2/newsletters/confirm?token=" + strings.Repeat("abcdefghij", 12) + ".sig"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = s.Send(ctx, mailer.Message{To: "reader@example.com", Subject: "Confirm your subscription — coworkjobs",
		Text: "Please confirm:\n" + link + "\n", HTML: "<p><a href=\"" + link + "\">Confirm</a></p>",
		ListUnsubscribe: "https://coworkjobs.example/v2/newsletters/unsubscribe?token=x"})
	if err != nil {
		t.Fatal(err)
	}
	mails, err := mailcatcher.For(dir, "reader@example.com")
	if err != nil || len(mails) != 1 {
		t.Fatalf("caught %d mails, err %v", len(mails), err)
	}
	m := mails[0]
	if m.Subject != "Confirm your subscription — coworkjobs" || !strings.Contains(m.Text, link) ||
		m.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" ||
		!strings.Contains(m.Header.Get("From"), "newsletter@coworkjobs.example") {
		t.Fatalf("mail %+v\n%s", m.Header, m.Text)
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"http://x:25", "smtp://", "smtp://host:99999", "::"} {
		if _, err := mailer.New(u, "a@example.com"); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
	if _, err := mailer.New("smtp://127.0.0.1:1025", "not an address"); err == nil {
		t.Error("bad from accepted")
	}
}

func TestSendFailsWhenServerDown(t *testing.T) {
	t.Parallel()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	_ = ln.Close()
	s, _ := mailer.New("smtp://"+addr, "a@example.com")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Send(ctx, mailer.Message{To: "b@example.com", Subject: "x", Text: "y"}); err == nil {
		t.Fatal("send to a closed port succeeded")
	}
}
