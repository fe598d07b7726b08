package web_test

import (
	"encoding/json"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// A service's item embeds FeedItem beside its extension, which comes last.
func TestFeedShape(t *testing.T) {
	type item struct {
		web.FeedItem
		Ext struct {
			N int `json:"n"`
		} `json:"_ext"`
	}
	it := item{FeedItem: web.FeedItem{ID: "x:1", URL: "u", Title: "t", Summary: "s", DatePublished: "2024-01-02T03:04:05Z", Tags: []string{}}}
	it.Ext.N = 2
	b, err := json.Marshal(web.NewFeed("T", "f", "h", []item{it}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":"vine/1","title":"T","feed_url":"f","home_page_url":"h","items":[` +
		`{"id":"x:1","url":"u","title":"t","summary":"s","date_published":"2024-01-02T03:04:05Z","tags":[],"_ext":{"n":2}}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}
