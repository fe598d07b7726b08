package reachapp

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus"
)

// The aggregators' formats of GET /feeds/jobs.xml?format=.
const (
	FormatIndeed = "indeed"
	FormatJooble = "jooble"
)

// aggregatorFeed answers GET /feeds/jobs.xml?format=indeed|jooble: every
// active job (of the configured plans) in that aggregator's XML.
//
// Indeed: the XML feed reference (docs.indeed.com, "XML feed reference":
// source, job, title, date, referencenumber, requisitionid, url, company,
// sourcename, city, country, description, salary, jobtype, expirationdate,
// remotetype). Jooble: its "XML Feed Specifications" (jobs, job with an id
// attribute, link, name, region, description, pubdate, updated, expire in
// DD.MM.YYYY, company, salary, jobtype). Neither has an element for an
// apply address on another site: url and link are the job's page, whose
// Apply button leads there.
func (h *handlers) aggregatorFeed(c *fiber.Ctx) error {
	q := web.Params(c)
	format, _ := q.Raw("format")
	if format != FormatIndeed && format != FormatJooble {
		q.Add("format must be one of indeed, jooble")
	}
	if err := q.Err(); err != nil {
		return err
	}
	changed, err := h.bus.Changed(c.UserContext())
	if err != nil {
		return err
	}
	if validators(c, changed, 900) {
		return c.SendStatus(http.StatusNotModified)
	}
	base := h.bus.BaseURL()
	w := jobbus.ActiveWalk{Plans: h.cfg.AggregatorPlans, Limit: batch}
	seen := h.impressions(c, statsbus.ChannelAggregator(format))
	if format == FormatJooble {
		return h.stream(c, MIMEXML, w, []byte(xml.Header+"<jobs>\n"), func(b []byte, d *jobbus.Detail) []byte {
			seen(d.ID)
			return h.joobleJob(b, d)
		}, []byte("</jobs>\n"))
	}
	head := xml.Header + "<source>\n<publisher>coworkjobs</publisher>\n<publisherurl>" + escape(base) + "</publisherurl>\n" +
		"<lastBuildDate>" + changed.UTC().Format(time.RFC1123) + "</lastBuildDate>\n"
	return h.stream(c, MIMEXML, w, []byte(head), func(b []byte, d *jobbus.Detail) []byte {
		seen(d.ID)
		return h.indeedJob(b, d)
	}, []byte("</source>\n"))
}

// aggregatorRef makes the page view and the Apply click of a job found on
// an aggregator count under its channel (job statistics).
func aggregatorRef(format string) string {
	return "?ref=" + url.QueryEscape(statsbus.ChannelAggregator(format))
}

func (h *handlers) indeedJob(b []byte, d *jobbus.Detail) []byte {
	el := func(name, v string) { b = appendElement(b, name, func(b []byte) []byte { return appendCDATA(b, v) }) }
	id := strconv.FormatInt(d.ID, 10)
	b = append(b, "<job>\n"...)
	el("title", d.Title)
	el("date", d.DateAdded.UTC().Format(time.RFC3339))
	el("referencenumber", "coworkjobs-"+id)
	el("requisitionid", id)
	el("url", h.bus.JobURL(jobbus.PageURL(d.Slug, d.ID))+aggregatorRef(FormatIndeed))
	el("company", d.Company)
	source := d.Company
	if d.SpaceName != nil && *d.SpaceName != "" {
		source = *d.SpaceName
	}
	el("sourcename", source)
	el("city", d.CityName)
	el("country", d.CityCountry)
	el("description", d.Description)
	if s := salary(d); s != "" {
		el("salary", s)
	}
	el("jobtype", map[string]string{"fulltime": "fulltime", "parttime": "parttime", "freelance": "contract", "internship": "internship"}[d.JobType])
	el("expirationdate", d.ExpirationDate.UTC().Format(time.RFC3339))
	switch d.WorkplaceType {
	case jobbus.WorkplaceRemote:
		el("remotetype", "Fully remote")
	case jobbus.WorkplaceHybrid:
		el("remotetype", "Hybrid remote")
	}
	return append(b, "</job>\n"...)
}

func (h *handlers) joobleJob(b []byte, d *jobbus.Detail) []byte {
	el := func(name, v string) { b = appendElement(b, name, func(b []byte) []byte { return appendCDATA(b, v) }) }
	date := func(name string, t time.Time) {
		b = appendElement(b, name, func(b []byte) []byte { return t.UTC().AppendFormat(b, "02.01.2006") })
	}
	b = append(b, `<job id="`...)
	b = strconv.AppendInt(b, d.ID, 10)
	b = append(b, "\">\n"...)
	el("link", h.bus.JobURL(jobbus.PageURL(d.Slug, d.ID))+aggregatorRef(FormatJooble))
	el("name", d.Title)
	region := d.CityName
	if d.CityCountry != "" {
		region += ", " + d.CityCountry
	}
	el("region", region)
	if s := salary(d); s != "" {
		el("salary", s)
	}
	el("description", d.Description)
	el("company", d.Company)
	date("pubdate", d.DateAdded)
	date("updated", d.UpdatedAt)
	date("expire", d.ExpirationDate)
	el("jobtype", map[string]string{"fulltime": "full-time", "parttime": "part-time", "freelance": "freelance", "internship": "internship"}[d.JobType])
	return append(b, "</job>\n"...)
}

// salary is a job's salary as text with its period ("EUR 40000 - 50000
// per year"), "" without one.
func salary(d *jobbus.Detail) string {
	per := d.SalaryPeriod
	if per == "" {
		per = jobbus.DefaultSalaryPeriod
	}
	per = " per " + per
	switch {
	case d.SalMin != nil && d.SalMax != nil && *d.SalMin != *d.SalMax:
		return d.Currency + " " + strconv.FormatInt(*d.SalMin, 10) + " - " + strconv.FormatInt(*d.SalMax, 10) + per
	case d.SalMin != nil:
		return d.Currency + " " + strconv.FormatInt(*d.SalMin, 10) + per
	case d.SalMax != nil:
		return d.Currency + " " + strconv.FormatInt(*d.SalMax, 10) + per
	}
	return ""
}

// appendElement appends <name>, what value appends, </name> and a newline.
func appendElement(b []byte, name string, value func([]byte) []byte) []byte {
	b = append(b, '<')
	b = append(b, name...)
	b = append(b, '>')
	b = value(b)
	b = append(b, "</"...)
	b = append(b, name...)
	return append(b, ">\n"...)
}

// appendCDATA appends s as a CDATA section, as both aggregators ask of
// every value: a "]]>" inside is split over two sections, and characters XML
// does not allow are dropped.
func appendCDATA(b []byte, s string) []byte {
	b = append(b, "<![CDATA["...)
	s = strings.ReplaceAll(s, "]]>", "]]]]><![CDATA[>")
	for _, r := range s {
		if r == utf8.RuneError || !xmlChar(r) {
			continue
		}
		b = utf8.AppendRune(b, r)
	}
	return append(b, "]]>"...)
}

// xmlChar reports whether XML 1.0 allows r (its Char production).
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

func escape(s string) string { return string(appendEscaped(nil, s)) }
