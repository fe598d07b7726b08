package reachapp

import (
	"bytes"
	"encoding/xml"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// MIMEXML is the sitemaps' and aggregator feeds' media type.
const MIMEXML = "application/xml; charset=utf-8"

const sitemapNS = "http://www.sitemaps.org/schemas/sitemap/0.9"

// maxPart bounds ?part= far above any board's jobs.
const maxPart = 1 << 30

// sitemap answers GET /sitemap.xml: the sitemap index (https://www.sitemaps.org/protocol.html),
// or with ?part=N that part: the public page of every active job whose id
// falls in the part, with its last change. Only the job pages are listed:
// spaces and blog posts have no public pages (yet).
func (h *handlers) sitemap(c *fiber.Ctx) error {
	q := web.Params(c)
	part := q.Int("part", 0, 1, maxPart)
	if err := q.Err(); err != nil {
		return err
	}
	changed, err := h.bus.Changed(c.UserContext())
	if err != nil {
		return err
	}
	if validators(c, changed, 300) {
		return c.SendStatus(http.StatusNotModified)
	}
	base := h.bus.BaseURL()
	size := h.cfg.SitemapPartSize
	if part == 0 {
		parts, err := h.bus.SitemapParts(c.UserContext(), size)
		if err != nil {
			return err
		}
		if len(parts) == 0 {
			// The protocol wants one sitemap at least: the first part,
			// empty until a job is posted.
			parts = []jobbus.SitemapPart{{N: 1, Modified: changed}}
		}
		b := []byte(xml.Header + `<sitemapindex xmlns="` + sitemapNS + `">` + "\n")
		for _, p := range parts {
			b = append(b, "<sitemap><loc>"...)
			b = appendEscaped(b, base+"/sitemap.xml?part="+strconv.FormatInt(p.N, 10))
			b = append(b, "</loc><lastmod>"...)
			b = p.Modified.UTC().AppendFormat(b, time.RFC3339)
			b = append(b, "</lastmod></sitemap>\n"...)
		}
		b = append(b, "</sitemapindex>\n"...)
		c.Set(fiber.HeaderContentType, MIMEXML)
		return c.Status(http.StatusOK).Send(b)
	}
	n := int64(part)
	w := jobbus.ActiveWalk{AfterID: (n - 1) * size, UpTo: n * size, Limit: batch}
	head := []byte(xml.Header + `<urlset xmlns="` + sitemapNS + `">` + "\n")
	return h.stream(c, MIMEXML, w, head, func(b []byte, d *jobbus.Detail) []byte {
		b = append(b, "<url><loc>"...)
		b = appendEscaped(b, h.bus.JobURL(jobbus.PageURL(d.Slug, d.ID)))
		b = append(b, "</loc><lastmod>"...)
		b = d.UpdatedAt.UTC().AppendFormat(b, time.RFC3339)
		return append(b, "</lastmod></url>\n"...)
	}, []byte("</urlset>\n"))
}

// appendEscaped appends s as XML character data.
func appendEscaped(b []byte, s string) []byte {
	var buf bytes.Buffer
	_ = xml.EscapeText(&buf, []byte(s)) // a bytes.Buffer does not fail
	return append(b, buf.Bytes()...)
}
