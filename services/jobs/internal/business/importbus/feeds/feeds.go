// Package feeds reads the public job-board formats an import source names
// into positions, each ready to become a POST /v2/jobs body: Greenhouse's
// job board API, Lever's postings API, Ashby's job board API, Personio's
// XML feed, and our own JSON ({"jobs": [bodies with external_ref]}). It
// fetches them with a conditional GET (ETag, Last-Modified) through
// libs/outbound, under the rules webhook deliveries follow (no private
// address unless allowlisted, a deadline, a bounded read).
package feeds

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/outbound"
)

// The kinds of source.
const (
	Greenhouse = "greenhouse"
	Lever      = "lever"
	Ashby      = "ashby"
	Personio   = "personio"
	JSON       = "json"
)

// Kinds lists them, in the document's order.
var Kinds = []string{Greenhouse, Lever, Ashby, Personio, JSON}

// ErrFormat is a body that is not the kind's format.
var ErrFormat = errors.New("feeds: not the source's format")

// Endpoint is the public URL of a board: the kind's API for a board token
// (a Greenhouse board token, a Lever site, an Ashby job board name, a
// Personio company), or the URL itself when one is given instead (the
// json kind takes only a URL).
func Endpoint(kind, token, rawURL string) (string, error) {
	if rawURL != "" {
		return rawURL, nil
	}
	t := url.PathEscape(token)
	switch kind {
	case Greenhouse:
		return "https://boards-api.greenhouse.io/v1/boards/" + t + "/jobs?content=true", nil
	case Lever:
		return "https://api.lever.co/v0/postings/" + t + "?mode=json", nil
	case Ashby:
		return "https://api.ashbyhq.com/posting-api/job-board/" + t + "?includeCompensation=true", nil
	case Personio:
		if strings.ContainsAny(token, "./:") {
			return "", fmt.Errorf("%w: a Personio company name has no dots, slashes or colons", ErrFormat)
		}
		return "https://" + t + ".jobs.personio.de/xml?language=en", nil
	}
	return "", fmt.Errorf("%w: the %s kind takes a url", ErrFormat, kind)
}

// Position is one job of a source, in our terms.
type Position struct {
	Ref          string // the source's own id: unique within the source
	Title        string
	Description  string // HTML, sanitised by the create path
	JobType      string // fulltime, parttime, freelance or internship
	City         string // as the source names it ("" when remote only)
	Workplace    string // on_site, hybrid, remote; "" when the source does not say
	ApplyURL     string
	Tags         []string
	SalaryMin    *int64
	SalaryMax    *int64
	Currency     string
	SalaryPeriod string // hour, day, week, month, year; "" with no salary

	raw map[string]any // the json kind: the body as sent
}

// Defaults fill what a source's positions do not say.
type Defaults struct {
	Company string // required: the board's company
	City    string // for a position with no city (remote ones)
	Tags    string // for a position with no department, team or keyword
}

// Body is the position as POST /v2/jobs's body (external_ref apart: the
// caller prefixes it with the source).
func (p Position) Body(d Defaults) map[string]any {
	if p.raw != nil {
		b := make(map[string]any, len(p.raw))
		for k, v := range p.raw {
			if k != "external_ref" {
				b[k] = v
			}
		}
		if _, ok := b["company"]; !ok {
			b["company"] = d.Company
		}
		return b
	}
	b := map[string]any{"title": p.Title, "company": d.Company, "description": p.Description, "job_type": p.JobType}
	tags := strings.Join(p.Tags, ",")
	if tags == "" {
		tags = d.Tags
	}
	b["tags"] = tags
	city := p.City
	if city == "" {
		city = d.City
	}
	if city != "" {
		b["city_name"] = city
	}
	if p.Workplace != "" {
		b["workplace_type"] = p.Workplace
	}
	if p.ApplyURL != "" {
		b["apply_url"] = p.ApplyURL
	}
	if p.SalaryMin != nil || p.SalaryMax != nil {
		if p.SalaryMin != nil {
			b["sal_min"] = *p.SalaryMin
		}
		if p.SalaryMax != nil {
			b["sal_max"] = *p.SalaryMax
		}
		if p.Currency != "" {
			b["currency"] = p.Currency
		}
		if p.SalaryPeriod != "" {
			b["salary_period"] = p.SalaryPeriod
		}
	}
	return b
}

// Parse reads a source's answer; feedURL is where it came from (Personio's
// positions link to its host).
func Parse(kind, feedURL string, body []byte) ([]Position, error) {
	var ps []Position
	var err error
	switch kind {
	case Greenhouse:
		ps, err = parseGreenhouse(body)
	case Lever:
		ps, err = parseLever(body)
	case Ashby:
		ps, err = parseAshby(body)
	case Personio:
		ps, err = parsePersonio(feedURL, body)
	case JSON:
		ps, err = parseJSON(body)
	default:
		return nil, fmt.Errorf("%w: unknown kind %q", ErrFormat, kind)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrFormat, kind, err)
	}
	seen := make(map[string]bool, len(ps))
	for _, p := range ps {
		if p.Ref == "" {
			return nil, fmt.Errorf("%w: %s: a position without an id", ErrFormat, kind)
		}
		if seen[p.Ref] {
			return nil, fmt.Errorf("%w: %s: the id %q is listed twice", ErrFormat, kind, p.Ref)
		}
		seen[p.Ref] = true
	}
	return ps, nil
}

type greenhouseJob struct {
	ID          int64  `json:"id"`
	Title       string `json:"title"`
	AbsoluteURL string `json:"absolute_url"`
	Content     string `json:"content"` // HTML, entity-escaped once more
	Location    struct {
		Name string `json:"name"`
	} `json:"location"`
	Departments []struct {
		Name string `json:"name"`
	} `json:"departments"`
	Metadata []struct {
		Name  string `json:"name"`
		Value any    `json:"value"`
	} `json:"metadata"`
}

func parseGreenhouse(body []byte) ([]Position, error) {
	var doc struct {
		Jobs *[]greenhouseJob `json:"jobs"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	if doc.Jobs == nil {
		return nil, errors.New(`no "jobs" list`)
	}
	out := make([]Position, 0, len(*doc.Jobs))
	for _, j := range *doc.Jobs {
		var hints []string
		for _, m := range j.Metadata {
			if s, ok := m.Value.(string); ok && strings.Contains(strings.ToLower(m.Name), "type") {
				hints = append(hints, s)
			}
		}
		city, workplace := place(j.Location.Name, false)
		ref := ""
		if j.ID > 0 {
			ref = strconv.FormatInt(j.ID, 10)
		}
		p := Position{Ref: ref, Title: j.Title, Description: html.UnescapeString(j.Content),
			JobType: jobType(append(hints, j.Title)...), City: city, Workplace: workplace, ApplyURL: j.AbsoluteURL}
		for _, d := range j.Departments {
			p.Tags = appendTag(p.Tags, d.Name)
		}
		out = append(out, p)
	}
	return out, nil
}

type leverPosting struct {
	ID          string `json:"id"`
	Text        string `json:"text"`
	Description string `json:"description"`
	Additional  string `json:"additional"`
	Lists       []struct {
		Text    string `json:"text"`
		Content string `json:"content"`
	} `json:"lists"`
	Categories struct {
		Commitment string `json:"commitment"`
		Department string `json:"department"`
		Location   string `json:"location"`
		Team       string `json:"team"`
	} `json:"categories"`
	WorkplaceType string `json:"workplaceType"`
	SalaryRange   *struct {
		Currency string   `json:"currency"`
		Interval string   `json:"interval"`
		Min      *float64 `json:"min"`
		Max      *float64 `json:"max"`
	} `json:"salaryRange"`
	HostedURL string `json:"hostedUrl"`
	ApplyURL  string `json:"applyUrl"`
}

// leverIntervals are Lever's salary intervals in our periods (one-time
// pay has none: no salary is given).
var leverIntervals = map[string]string{"per-hour-wage": "hour", "per-day-wage": "day", "per-week-salary": "week",
	"per-month-salary": "month", "per-year-salary": "year"}

func parseLever(body []byte) ([]Position, error) {
	var doc []leverPosting
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	out := make([]Position, 0, len(doc))
	for _, j := range doc {
		var desc strings.Builder
		desc.WriteString(j.Description)
		for _, l := range j.Lists {
			desc.WriteString("<h3>" + html.EscapeString(l.Text) + "</h3><ul>" + l.Content + "</ul>")
		}
		desc.WriteString(j.Additional)
		city, workplace := place(j.Categories.Location, false)
		switch j.WorkplaceType {
		case "on-site":
			workplace = "on_site"
		case "hybrid", "remote":
			workplace = j.WorkplaceType
		}
		p := Position{Ref: j.ID, Title: j.Text, Description: desc.String(), JobType: jobType(j.Categories.Commitment, j.Text),
			City: city, Workplace: workplace, ApplyURL: cmpOr(j.ApplyURL, j.HostedURL)}
		p.Tags = appendTag(appendTag(p.Tags, j.Categories.Department), j.Categories.Team)
		if s := j.SalaryRange; s != nil && leverIntervals[s.Interval] != "" && (s.Min != nil || s.Max != nil) {
			p.SalaryMin, p.SalaryMax = whole(s.Min), whole(s.Max)
			p.Currency, p.SalaryPeriod = strings.ToUpper(s.Currency), leverIntervals[s.Interval]
		}
		out = append(out, p)
	}
	return out, nil
}

type ashbyJob struct {
	ID              string `json:"id"`
	Title           string `json:"title"`
	Location        string `json:"location"`
	Department      string `json:"department"`
	Team            string `json:"team"`
	IsListed        *bool  `json:"isListed"`
	IsRemote        bool   `json:"isRemote"`
	WorkplaceType   string `json:"workplaceType"`
	DescriptionHTML string `json:"descriptionHtml"`
	EmploymentType  string `json:"employmentType"`
	JobURL          string `json:"jobUrl"`
	ApplyURL        string `json:"applyUrl"`
	Address         *struct {
		PostalAddress struct {
			Locality string `json:"addressLocality"`
		} `json:"postalAddress"`
	} `json:"address"`
}

func parseAshby(body []byte) ([]Position, error) {
	var doc struct {
		Jobs *[]ashbyJob `json:"jobs"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	if doc.Jobs == nil {
		return nil, errors.New(`no "jobs" list`)
	}
	out := make([]Position, 0, len(*doc.Jobs))
	for _, j := range *doc.Jobs {
		if j.IsListed != nil && !*j.IsListed {
			continue // not public: not ours to post
		}
		loc := j.Location
		if j.Address != nil && j.Address.PostalAddress.Locality != "" {
			loc = j.Address.PostalAddress.Locality
		}
		city, workplace := place(loc, j.IsRemote)
		switch j.WorkplaceType {
		case "OnSite":
			workplace = "on_site"
		case "Hybrid":
			workplace = "hybrid"
		case "Remote":
			workplace = "remote"
		}
		p := Position{Ref: j.ID, Title: j.Title, Description: j.DescriptionHTML, JobType: jobType(j.EmploymentType, j.Title),
			City: city, Workplace: workplace, ApplyURL: cmpOr(j.ApplyURL, j.JobURL)}
		p.Tags = appendTag(appendTag(p.Tags, j.Department), j.Team)
		out = append(out, p)
	}
	return out, nil
}

type personioPosition struct {
	ID              string `xml:"id"`
	Office          string `xml:"office"`
	Department      string `xml:"department"`
	Name            string `xml:"name"`
	JobDescriptions []struct {
		Name  string `xml:"name"`
		Value string `xml:"value"`
	} `xml:"jobDescriptions>jobDescription"`
	EmploymentType string `xml:"employmentType"`
	Schedule       string `xml:"schedule"`
	Keywords       string `xml:"keywords"`
}

func parsePersonio(feedURL string, body []byte) ([]Position, error) {
	var doc struct {
		XMLName   xml.Name           `xml:"workzag-jobs"`
		Positions []personioPosition `xml:"position"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	base := ""
	if u, err := url.Parse(feedURL); err == nil && u.Host != "" {
		base = u.Scheme + "://" + u.Host
	}
	out := make([]Position, 0, len(doc.Positions))
	for _, j := range doc.Positions {
		var desc strings.Builder
		for _, d := range j.JobDescriptions {
			desc.WriteString("<h2>" + html.EscapeString(strings.TrimSpace(d.Name)) + "</h2>" + d.Value)
		}
		city, workplace := place(j.Office, false)
		p := Position{Ref: strings.TrimSpace(j.ID), Title: strings.TrimSpace(j.Name), Description: desc.String(),
			JobType: jobType(j.EmploymentType, j.Schedule, j.Name), City: city, Workplace: workplace}
		if base != "" && p.Ref != "" {
			p.ApplyURL = base + "/job/" + url.PathEscape(p.Ref)
		}
		p.Tags = appendTag(p.Tags, j.Department)
		for _, k := range strings.Split(j.Keywords, ",") {
			p.Tags = appendTag(p.Tags, k)
		}
		out = append(out, p)
	}
	return out, nil
}

func parseJSON(body []byte) ([]Position, error) {
	var doc struct {
		Jobs *[]map[string]any `json:"jobs"`
	}
	d := json.NewDecoder(strings.NewReader(string(body)))
	d.UseNumber() // integers stay integers for the create path's checks
	if err := d.Decode(&doc); err != nil {
		return nil, err
	}
	if doc.Jobs == nil {
		return nil, errors.New(`no "jobs" list`)
	}
	out := make([]Position, 0, len(*doc.Jobs))
	for i, j := range *doc.Jobs {
		ref, _ := j["external_ref"].(string)
		if strings.TrimSpace(ref) == "" {
			return nil, fmt.Errorf("jobs[%d] has no external_ref", i)
		}
		out = append(out, Position{Ref: ref, raw: j})
	}
	return out, nil
}

// jobType reads a kind of employment from the first hint that names one
// (an employment type, a schedule, then the title); fulltime otherwise.
func jobType(hints ...string) string {
	for _, h := range hints {
		s := strings.ToLower(h)
		switch {
		case strings.Contains(s, "intern") || strings.Contains(s, "trainee") || strings.Contains(s, "praktik"):
			return "internship"
		case strings.Contains(s, "freelance") || strings.Contains(s, "contract"):
			return "freelance"
		case strings.Contains(s, "part") || strings.Contains(s, "working_student") || strings.Contains(s, "werkstudent") ||
			strings.Contains(s, "teilzeit"):
			return "parttime"
		case strings.Contains(s, "full") || strings.Contains(s, "permanent") || strings.Contains(s, "vollzeit") || s == "temporary":
			return "fulltime"
		}
	}
	return "fulltime"
}

// place splits a location as boards write it ("Berlin, Germany",
// "Remote", "Remote - Europe") into a city and whether it is remote.
func place(loc string, remote bool) (city, workplace string) {
	loc = strings.TrimSpace(loc)
	if strings.Contains(strings.ToLower(loc), "remote") {
		return "", "remote"
	}
	if i := strings.IndexAny(loc, ",;("); i >= 0 {
		loc = strings.TrimSpace(loc[:i])
	}
	if remote {
		return loc, "remote"
	}
	return loc, ""
}

func appendTag(tags []string, t string) []string {
	t = strings.ToLower(strings.Join(strings.Fields(strings.ReplaceAll(t, ",", " ")), " "))
	if t == "" || len(t) > 50 || slices.Contains(tags, t) || len(tags) >= 20 {
		return tags
	}
	return append(tags, t)
}

func whole(f *float64) *int64 {
	if f == nil || *f < 0 {
		return nil
	}
	n := int64(*f + 0.5)
	return &n
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Validators are what a source answered last, for the next conditional GET.
type Validators struct {
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
}

// Fetched is a source's answer.
type Fetched struct {
	NotModified bool // 304: nothing changed since Validators
	Body        []byte
	Validators  Validators
}

// ErrFetch is a source that did not answer with its feed.
var ErrFetch = errors.New("feeds: fetch")

// Fetch GETs feedURL, conditionally on v: a 304 is NotModified.
func Fetch(ctx context.Context, c *outbound.Client, feedURL string, v Validators) (Fetched, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, feedURL, nil)
	if err != nil {
		return Fetched{}, fmt.Errorf("%w: bad url", ErrFetch)
	}
	req.Header.Set("Accept", "application/json, application/xml;q=0.9, */*;q=0.1")
	req.Header.Set("User-Agent", "coworkjobs-import/1")
	if v.ETag != "" {
		req.Header.Set("If-None-Match", v.ETag)
	}
	if v.LastModified != "" {
		req.Header.Set("If-Modified-Since", v.LastModified)
	}
	resp, err := c.Do(ctx, req)
	switch {
	case err != nil:
		return Fetched{}, fmt.Errorf("%w: %s", ErrFetch, outbound.Describe(err))
	case resp.Status == http.StatusNotModified:
		return Fetched{NotModified: true, Validators: v}, nil
	case resp.Status != http.StatusOK:
		return Fetched{}, fmt.Errorf("%w: the source answered %d", ErrFetch, resp.Status)
	case resp.Truncated:
		return Fetched{}, fmt.Errorf("%w: the feed is larger than %d bytes", ErrFetch, len(resp.Body))
	}
	out := Fetched{Body: resp.Body, Validators: Validators{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}}
	if _, err := http.ParseTime(out.Validators.LastModified); err != nil {
		out.Validators.LastModified = "" // not a date: never sent back
	}
	return out, nil
}

// FetchTimeout is a fetch's deadline; MaxFeed the largest feed read.
const (
	FetchTimeout = 30 * time.Second
	MaxFeed      = 16 << 20
)
