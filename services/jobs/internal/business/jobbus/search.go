package jobbus

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sort orders of a listing.
const (
	SortRelevance = "relevance" // the default when q is given
	SortNewest    = "newest"    // the default otherwise
	SortDistance  = "distance"  // the default with near, which it needs
)

// DefaultSort is the order of a listing that names none.
func (f ListFilter) DefaultSort() string {
	switch {
	case f.Near != nil:
		return SortDistance
	case !f.Search.Empty():
		return SortRelevance
	}
	return SortNewest
}

// Search is a parsed q (docs/search.md): every word must match (exactly, by
// a stem in one of the board's languages, or within a few typos), the last
// word also as a prefix; every phrase must match word for word; no excluded
// word may match.
type Search struct {
	Words    []string
	Prefix   []bool // Prefix[i]: Words[i] is being typed (the last word)
	Fuzz     []int  // Fuzz[i]: the typos Words[i] may hold
	Phrases  []string
	Excluded []string
}

// Empty reports whether the search selects nothing (no q).
func (s Search) Empty() bool {
	return len(s.Words) == 0 && len(s.Phrases) == 0 && len(s.Excluded) == 0
}

// Typos forgiven per word, as Typesense and Meilisearch do by default: one
// edit in a word of 5 letters or more, two from 9.
const (
	oneTypoLen  = 5
	twoTyposLen = 9
	// MaxSearchTerms bounds the words of a q (each costs a look-up).
	MaxSearchTerms = 10
)

func fuzz(w string) int {
	switch n := utf8.RuneCountInString(w); {
	case n >= twoTyposLen:
		return 2
	case n >= oneTypoLen:
		return 1
	}
	return 0
}

// ParseSearch reads q: words in any order, "a phrase" for words next to each
// other, -word to exclude one. Words are split on anything that is not a
// letter or a digit, as PostgreSQL's parser splits the jobs' text, and
// lowercased (accents are folded by the database). ok is false when q holds
// no word at all.
func ParseSearch(q string) (s Search, ok bool) {
	var words []string
	inPhrase, excluded := false, false
	var phrase []string
	var cur strings.Builder
	lastWasWord := false // the last token was a plain word (not in a phrase, not excluded)
	flush := func() {
		if cur.Len() == 0 {
			return
		}
		w := strings.ToLower(cur.String())
		cur.Reset()
		lastWasWord = false
		switch {
		case inPhrase:
			phrase = append(phrase, w)
		case excluded:
			s.Excluded = append(s.Excluded, w)
		default:
			words = append(words, w)
			lastWasWord = true
		}
	}
	prev := ' '
	for _, r := range q {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur.WriteRune(r)
		case r == '"':
			flush()
			if inPhrase && len(phrase) > 0 {
				s.Phrases = append(s.Phrases, strings.Join(phrase, " "))
			}
			phrase, inPhrase, excluded, lastWasWord = nil, !inPhrase, false, false
		case r == '-' && cur.Len() == 0 && !inPhrase && unicode.IsSpace(prev):
			excluded = true
		default:
			flush()
			if unicode.IsSpace(r) {
				excluded = false
			}
		}
		prev = r
	}
	flush()
	if inPhrase && len(phrase) > 0 { // an unclosed quote: a phrase to the end
		s.Phrases = append(s.Phrases, strings.Join(phrase, " "))
	}
	// The last word is a prefix while it is being typed: q ends with it.
	last, _ := utf8.DecodeLastRuneInString(q)
	typing := lastWasWord && (unicode.IsLetter(last) || unicode.IsDigit(last))
	for i, w := range words {
		s.Words = append(s.Words, w)
		// One letter is no prefix worth searching: it would match most words.
		s.Prefix = append(s.Prefix, typing && i == len(words)-1 && utf8.RuneCountInString(w) > 1)
		s.Fuzz = append(s.Fuzz, fuzz(w))
	}
	return s, !s.Empty()
}

// Terms counts what a search looks up.
func (s Search) Terms() int { return len(s.Words) + len(s.Phrases) + len(s.Excluded) }
