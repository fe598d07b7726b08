package reachapp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus"
)

// EmbedMax is the most jobs the embed lists (the space's newest).
const EmbedMax = 50

var slugRE = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

type embedJob struct {
	Title string `json:"title"`
	Type  string `json:"type"`
	City  string `json:"city"`
	URL   string `json:"url"`
}

var jobTypeLabels = map[string]string{"fulltime": "Full-time", "parttime": "Part-time", "freelance": "Freelance", "internship": "Internship"}

// embed answers GET /embed/jobs.js?space=<slug>: a script a space owner
// pastes into their own site (<script src=… async></script>) that shows the
// space's active jobs right after itself, or in the element its
// data-target names. The jobs travel inside the script: it makes no request
// of its own, sets no cookie and loads nothing from anywhere. It renders
// into a shadow root with text nodes only (nothing of a job is parsed as
// HTML), in a neutral style the host page themes with CSS variables
// (--cwj-font, --cwj-color, --cwj-muted, --cwj-link, --cwj-background,
// --cwj-border, --cwj-radius, --cwj-gap), which cross the shadow boundary.
func (h *handlers) embed(c *fiber.Ctx) error {
	q := web.Params(c)
	slug, given := q.Text("space", 100)
	switch {
	case !given || slug == "":
		q.Add("space is required: the slug of the space whose jobs to show")
	case !slugRE.MatchString(slug):
		q.Add("space must be a space slug: lowercase letters and digits separated by hyphens")
	}
	if err := q.Err(); err != nil {
		return err
	}
	space, ok, err := h.cfg.Spaces.SpaceBySlug(c.UserContext(), slug)
	if err != nil {
		return &web.Error{Status: http.StatusServiceUnavailable, Code: web.CodeServiceUnavailable,
			Message: "The space directory is unavailable; retry shortly"}
	}
	if !ok || !space.Confirmed {
		return web.NotFound("No space has this slug")
	}
	jobs, changed, err := h.bus.Feed(c.UserContext(), jobbus.ListFilter{SpaceID: space.ID, Limit: EmbedMax})
	if err != nil {
		return err
	}
	c.Set("Cross-Origin-Resource-Policy", "cross-origin")
	c.Set(fiber.HeaderAccessControlAllowOrigin, "*")
	if validators(c, changed, 300) {
		return c.SendStatus(http.StatusNotModified)
	}
	list := make([]embedJob, len(jobs))
	seen := h.impressions(c, statsbus.ChannelEmbed)
	for i, j := range jobs {
		// ?ref=embed: the page's view and its Apply click count under the embed.
		list[i] = embedJob{Title: j.Title, Type: jobTypeLabels[j.JobType], City: j.CityName,
			URL: h.bus.JobURL(jobbus.PageURL(j.Slug, j.ID)) + "?ref=" + statsbus.ChannelEmbed}
		seen(j.ID)
	}
	// json.Marshal escapes <, > and & and the line separators: the data is
	// a plain JavaScript literal, whatever a title holds.
	data, err := json.Marshal(struct {
		Space string     `json:"space"`
		Jobs  []embedJob `json:"jobs"`
	}{space.Name, list})
	if err != nil {
		return fmt.Errorf("encode embed: %w", err)
	}
	c.Set(fiber.HeaderContentType, "text/javascript; charset=utf-8")
	return c.Status(http.StatusOK).SendString(strings.Replace(embedScript, "__DATA__", string(data), 1))
}

// embedScript renders the list. The style sheet is constructed (no <style>
// element, which a host page's CSP may refuse) where the browser can.
const embedScript = `/* coworkjobs: the active jobs of a space. */
(function () {
  "use strict";
  var data = __DATA__;
  var script = document.currentScript;
  var target = script && script.getAttribute("data-target");
  var host = target ? document.querySelector(target) : null;
  if (!host) {
    host = document.createElement("div");
    if (script && script.parentNode) { script.parentNode.insertBefore(host, script.nextSibling); } else { document.body.appendChild(host); }
  }
  host.classList.add("coworkjobs-embed");
  var root = host.attachShadow ? host.attachShadow({ mode: "open" }) : host;
  var css = ":host{display:block}" +
    ".cwj{font:var(--cwj-font,inherit);color:var(--cwj-color,inherit);background:var(--cwj-background,transparent);" +
    "border:1px solid var(--cwj-border,#d0d4da);border-radius:var(--cwj-radius,6px);padding:var(--cwj-gap,.75rem);margin:0}" +
    ".cwj ul{list-style:none;margin:0;padding:0}.cwj li{padding:var(--cwj-gap,.75rem) 0;border-top:1px solid var(--cwj-border,#d0d4da)}" +
    ".cwj li:first-child{border-top:0}.cwj a{color:var(--cwj-link,inherit);font-weight:600}" +
    ".cwj .meta{display:block;color:var(--cwj-muted,#5f6b7a);font-size:.9em}.cwj .none{color:var(--cwj-muted,#5f6b7a)}";
  var box = document.createElement("section");
  box.className = "cwj";
  box.setAttribute("aria-label", "Jobs at " + data.space);
  if (root.adoptedStyleSheets !== undefined && typeof CSSStyleSheet === "function" && CSSStyleSheet.prototype.replaceSync) {
    var sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
    root.adoptedStyleSheets = [sheet];
  } else {
    var style = document.createElement("style");
    style.textContent = css;
    root.appendChild(style);
  }
  if (data.jobs.length === 0) {
    var none = document.createElement("p");
    none.className = "none";
    none.textContent = "No open positions right now.";
    box.appendChild(none);
  } else {
    var ul = document.createElement("ul");
    data.jobs.forEach(function (j) {
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = j.url;
      a.rel = "noopener";
      a.textContent = j.title;
      var meta = document.createElement("span");
      meta.className = "meta";
      meta.textContent = [j.type, j.city].filter(Boolean).join(" · ");
      li.appendChild(a);
      li.appendChild(meta);
      ul.appendChild(li);
    });
    box.appendChild(ul);
  }
  root.appendChild(box);
})();
`
