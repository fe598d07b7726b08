package privacy_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
)

func sealer(t *testing.T, secret string) *privacy.Sealer {
	t.Helper()
	s, err := privacy.NewSealer([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTokenOpensToTheNormalisedAddress(t *testing.T) {
	s := sealer(t, strings.Repeat("k", 32))
	tok := s.Token("  Mia@Example.COM ")
	if strings.Contains(strings.ToLower(tok), "mia") || strings.Contains(tok, "example") {
		t.Fatalf("the token shows the address: %s", tok)
	}
	got, err := s.Open(tok)
	if err != nil || got != "mia@example.com" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if s.Token("mia@example.com") != tok {
		t.Fatal("one address, two tokens: a resent mail would differ")
	}
	if s.Token("noah@example.com") == tok {
		t.Fatal("two addresses, one token")
	}
}

func TestForgedTokensFail(t *testing.T) {
	s := sealer(t, strings.Repeat("k", 32))
	tok := s.Token("mia@example.com")
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	bad := map[string]string{
		"empty":        "",
		"other secret": sealer(t, strings.Repeat("x", 32)).Token("mia@example.com"),
		"cut":          tok[:len(tok)-2],
		"too short":    base64.RawURLEncoding.EncodeToString(raw[:20]),
		"not base64":   "*" + tok,
		"too long":     strings.Repeat("A", privacy.MaxTokenLen+1),
	}
	for i := range raw { // every single bit flipped in every byte position
		b := append([]byte(nil), raw...)
		b[i] ^= 0x01
		bad["flipped "+string(rune('a'+i%26))+strings.Repeat("'", i/26)] = base64.RawURLEncoding.EncodeToString(b)
	}
	for name, tk := range bad {
		if got, err := s.Open(tk); err == nil {
			t.Errorf("%s: opened to %q", name, got)
		}
	}
	if _, err := privacy.NewSealer([]byte("short")); err == nil {
		t.Error("a short secret is accepted")
	}
}

func TestAddLink(t *testing.T) {
	s := sealer(t, strings.Repeat("k", 32))
	m := s.AddLink(mailer.Message{To: "mia@example.com", Text: "Hello\n", HTML: "<p>Hello</p>"}, "https://board.example/")
	link := "https://board.example/v2/privacy/erase?token=" + s.Token("mia@example.com")
	if !strings.Contains(m.Text, link) || !strings.Contains(m.HTML, `href="`+link+`"`) {
		t.Fatalf("no erasure link:\n%s\n%s", m.Text, m.HTML)
	}
	if plain := s.AddLink(mailer.Message{To: "mia@example.com", Text: "Hi"}, "https://board.example"); plain.HTML != "" {
		t.Fatal("an HTML part was added to a text-only mail")
	}
}
