// Package mailcatcher is a tiny SMTP server (github.com/emersion/go-smtp) that
// keeps every message it receives as an .eml file in a folder, so that a
// person running the suite locally can open the confirmation mail, and tests
// can prove real delivery over SMTP.
package mailcatcher

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
)

// MaxMessageBytes bounds one message.
const MaxMessageBytes = 10 << 20

// Server catches mail into Dir.
type Server struct {
	Dir string
	Log *slog.Logger

	smtp *smtp.Server
	mu   sync.Mutex
	n    int
}

// New returns a catcher writing into dir (created if missing).
func New(dir string, log *slog.Logger) (*Server, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("mail folder: %w", err)
	}
	s := &Server{Dir: dir, Log: log}
	srv := smtp.NewServer(s)
	srv.Domain = "mailcatcher.local"
	srv.MaxMessageBytes = MaxMessageBytes
	srv.MaxRecipients = 50
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	srv.AllowInsecureAuth = true
	s.smtp = srv
	return s, nil
}

// Serve accepts SMTP connections on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	go func() {
		<-ctx.Done()
		// ctx is already done here; the shutdown gets its own deadline.
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = s.smtp.Shutdown(shutdownCtx)
	}()
	if err := s.smtp.Serve(ln); err != nil && !errors.Is(err, smtp.ErrServerClosed) {
		return fmt.Errorf("smtp serve: %w", err)
	}
	return nil
}

// NewSession implements smtp.Backend.
func (s *Server) NewSession(_ *smtp.Conn) (smtp.Session, error) { return &session{srv: s}, nil }

type session struct {
	srv  *Server
	from string
	to   []string
}

func (x *session) Reset()        { x.from, x.to = "", nil }
func (x *session) Logout() error { return nil }

func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	x.from = from
	return nil
}

func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.to = append(x.to, to)
	return nil
}

func (x *session) Data(r io.Reader) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "X-Mailcatcher-From: %s\r\nX-Mailcatcher-To: %s\r\n", x.from, strings.Join(x.to, ", "))
	if _, err := io.Copy(&b, r); err != nil {
		return err
	}
	path, err := x.srv.write(b.Bytes())
	if err != nil {
		return err
	}
	if x.srv.Log != nil {
		x.srv.Log.Info("mail caught", "to", strings.Join(x.to, ", "), "file", path)
	}
	return nil
}

func (s *Server) write(msg []byte) (string, error) {
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("%s-%04d-%s.eml", time.Now().UTC().Format("20060102T150405.000"), n, hex.EncodeToString(rnd[:]))
	path := filepath.Join(s.Dir, name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, msg, 0o600); err != nil {
		return "", fmt.Errorf("write mail: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("write mail: %w", err)
	}
	return path, nil
}

// Messages returns the caught .eml files, oldest first.
func Messages(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.eml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	return paths, nil
}
