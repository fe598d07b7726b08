package postbus

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// WordsPerMinute is the reading speed behind ReadingTime: 230 words a minute,
// the commonly quoted average for adults reading on a screen.
const WordsPerMinute = 230

// ExcerptMaxChars bounds excerpts and feed summaries (characters, not bytes).
const ExcerptMaxChars = 280

// ReadingTime is the whole number of minutes a post's body takes to read:
// its visible words divided by WordsPerMinute, rounded up, and at least 1.
// Markup, scripts and styles are not words.
func ReadingTime(bodyHTML string) int {
	words := CountWords(PlainText(bodyHTML))
	minutes := (words + WordsPerMinute - 1) / WordsPerMinute
	if minutes < 1 {
		return 1
	}
	return minutes
}

// CountWords counts runs of non-space characters.
func CountWords(text string) int {
	n, in := 0, false
	for _, r := range text {
		if unicode.IsSpace(r) {
			in = false
			continue
		}
		if !in {
			n++
			in = true
		}
	}
	return n
}

// PlainText returns the visible text of an HTML fragment with entities decoded
// and whitespace collapsed; block elements separate words, inline ones do not,
// and the content of script, style and similar elements is dropped.
func PlainText(fragment string) string {
	if !strings.ContainsAny(fragment, "<&") {
		return collapse(fragment)
	}
	z := html.NewTokenizer(strings.NewReader(fragment))
	var b strings.Builder
	b.Grow(len(fragment))
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			// io.EOF at the end; the tokenizer recovers from any other malformation.
			return collapse(b.String())
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if hidden[a] {
				if z.Token().Type == html.EndTagToken {
					if skip > 0 {
						skip--
					}
				} else {
					skip++
				}
				continue
			}
			if block[a] {
				b.WriteByte(' ')
			}
		}
	}
}

// hidden elements carry no readable text.
var hidden = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Template: true, atom.Noscript: true,
	atom.Iframe: true, atom.Object: true, atom.Svg: true, atom.Math: true, atom.Head: true, atom.Title: true,
}

// block elements separate words.
var block = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true, atom.Br: true,
	atom.Dd: true, atom.Details: true, atom.Div: true, atom.Dl: true, atom.Dt: true, atom.Figcaption: true,
	atom.Figure: true, atom.Footer: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true,
	atom.H5: true, atom.H6: true, atom.Header: true, atom.Hr: true, atom.Img: true, atom.Li: true,
	atom.Main: true, atom.Nav: true, atom.Ol: true, atom.P: true, atom.Pre: true, atom.Section: true,
	atom.Summary: true, atom.Table: true, atom.Td: true, atom.Th: true, atom.Tr: true, atom.Ul: true,
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// Summarize shortens plain text to at most max characters, cutting at a word
// boundary where one is near and ending with an ellipsis when it cut.
func Summarize(text string, max int) string {
	text = collapse(text)
	if max < 1 {
		return ""
	}
	if utf8.RuneCountInString(text) <= max {
		return text
	}
	// Keep max-1 characters so the ellipsis fits.
	cut := 0
	for i := range text {
		if cut == max-1 {
			text = text[:i]
			break
		}
		cut++
	}
	if sp := strings.LastIndexByte(text, ' '); sp > len(text)/2 {
		text = text[:sp]
	}
	text = strings.TrimRightFunc(text, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) })
	return text + "…"
}
