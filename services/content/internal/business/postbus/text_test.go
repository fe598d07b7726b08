package postbus

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func repeatWords(n int) string { return strings.Repeat("word ", n) }

func TestReadingTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want int
	}{
		{"readingTime1WhenEmpty", "", 1},
		{"readingTime1WhenOnlyMarkup", "<p></p><img src=x>", 1},
		{"readingTime1ForOneWord", "<p>hello</p>", 1},
		{"readingTime1At230Words", "<p>" + repeatWords(230) + "</p>", 1},
		{"readingTime2At231Words", "<p>" + repeatWords(231) + "</p>", 2},
		{"readingTime3At690Words", "<p>" + repeatWords(690) + "</p>", 3},
		{"readingTimeIgnoresScriptAndStyle", "<p>" + repeatWords(230) + "</p><script>" + repeatWords(500) +
			"</script><style>" + repeatWords(500) + "</style>", 1},
		{"readingTimeCountsAcrossBlocks", strings.Repeat("<li>one two</li>", 231), 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := ReadingTime(tc.body); got != tc.want {
				t.Errorf("ReadingTime = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestPlainText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"plainTextNoMarkup", "  just   text\n here ", "just text here"},
		{"plainTextBlocksSeparateWords", "<p>one</p><p>two</p><br>three", "one two three"},
		{"plainTextInlineJoins", "wo<b>rd</b> <em>x</em>", "word x"},
		{"plainTextEntitiesDecoded", "<p>fish &amp; chips &lt;3 caf&eacute;</p>", "fish & chips <3 café"},
		{"plainTextDropsHidden", "a<script>var x = 1</script>b<style>p{}</style> c<template>t</template>", "ab c"},
		{"plainTextUnclosedScript", "a <script>never closed", "a"},
		{"plainTextBrokenMarkup", "<p>a <b>b</p> <i>c", "a b c"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := PlainText(tc.in); got != tc.want {
				t.Errorf("PlainText(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCountWords(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"": 0, "  ": 0, "a": 1, " a  b\tc\n": 3, "l'été est là": 3} {
		if got := CountWords(in); got != want {
			t.Errorf("CountWords(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("alpha beta, ", 40)
	tests := []struct {
		name, in string
		max      int
		want     string
	}{
		{"summarizeShortUnchanged", "short text", 280, "short text"},
		{"summarizeExactlyMax", "abcde", 5, "abcde"},
		{"summarizeCutsAtWord", "one two three four", 12, "one two…"},
		{"summarizeLongWordCutInside", "abcdefghijklmnop", 6, "abcde…"},
		{"summarizeRunesNotBytes", "éééééééééé", 5, "éééé…"},
		{"summarizeZero", "abc", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Summarize(tc.in, tc.max); got != tc.want {
				t.Errorf("Summarize(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
		})
	}
	got := Summarize(long, ExcerptMaxChars)
	if n := utf8.RuneCountInString(got); n > ExcerptMaxChars || !strings.HasSuffix(got, "beta…") {
		t.Errorf("long summary (%d chars) = %q", n, got)
	}
}

// benchBody is a realistic post: about 900 words in headings, paragraphs,
// lists and links.
var benchBody = strings.Repeat(`<h2>Start with the members</h2><p>The best community managers we have hired all told us the same thing: they applied because the ad described <a href="https://example.org/people">the people</a> they would look after. Who are your members?</p><ul><li>Describe the members first</li><li>Show a <strong>typical</strong> week</li></ul>`, 18)

func BenchmarkReadingTime(b *testing.B) {
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		ReadingTime(benchBody)
	}
}

func BenchmarkPlainText(b *testing.B) {
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		PlainText(benchBody)
	}
}

func BenchmarkSummarize(b *testing.B) {
	text := PlainText(benchBody)
	b.ReportAllocs()
	for b.Loop() {
		Summarize(text, ExcerptMaxChars)
	}
}

// FuzzText checks that no input makes the text helpers panic, that summaries
// respect their bound, and that reading time is always at least a minute.
func FuzzText(f *testing.F) {
	for _, s := range []string{"", "<p>a</p>", "<script>", "&amp;&#x;", "é<b>é</b>é", benchBody, "\x00\xff<"} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1000 {
			return
		}
		text := PlainText(s)
		if sum := Summarize(text, max); utf8.RuneCountInString(sum) > max {
			t.Errorf("Summarize(%q, %d) = %q is too long", text, max, sum)
		}
		if ReadingTime(s) < 1 {
			t.Error("reading time below one minute")
		}
		_ = SanitizeHTML(s)
	})
}
