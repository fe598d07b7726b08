// Package blogseed holds the demo blog: a dozen posts with their authors,
// categories and tags, loaded by `content-seed demo`.
package blogseed

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus"
)

var (
	mara  = postbus.Author{Name: "Mara Lindqvist", Username: "mara"}
	tomas = postbus.Author{Name: "Tomás Ferreira", Username: "tomas"}
	aiko  = postbus.Author{Name: "Aiko Tanaka", Username: "aiko"}
	jonas = postbus.Author{Name: "Jonas Becker", Username: "jonas"}
)

var (
	catCareers   = postbus.Term{Name: "Careers", Slug: "careers"}
	catCommunity = postbus.Term{Name: "Community", Slug: "community"}
	catSpaces    = postbus.Term{Name: "Coworking Spaces", Slug: "coworking-spaces"}
	catRemote    = postbus.Term{Name: "Remote Work", Slug: "remote-work"}
	catNews      = postbus.Term{Name: "Product News", Slug: "product-news"}
)

func tags(slugs ...string) []postbus.Term {
	out := make([]postbus.Term, len(slugs))
	for i, s := range slugs {
		out[i] = postbus.Term{Name: strings.ReplaceAll(s, "-", " "), Slug: s}
	}
	return out
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// paragraphs wraps each text in <p>.
func paragraphs(texts ...string) string {
	var b strings.Builder
	for _, t := range texts {
		b.WriteString("<p>")
		b.WriteString(t)
		b.WriteString("</p>\n")
	}
	return b.String()
}

// lisbonSpaces is the long part of the Lisbon guide.
func lisbonSpaces() string {
	spaces := []struct{ name, text string }{
		{"The Dock House", "A former customs warehouse with long shared tables facing the water, a quiet library upstairs and a kitchen where members cook lunch together on Fridays."},
		{"Marvila Works", "Three floors of a biscuit factory, with private studios for small teams, a woodshop in the basement and a terrace that looks across the river to Montijo."},
		{"Rio Lab", "Small and friendly, run by two designers who organise a portfolio review every month and keep a shelf of design books that members may borrow."},
		{"Cais Collective", "Right next to the station, so it fills up with commuters from Cascais; book a meeting room early, because the ones with a view go first."},
		{"Alfama Rooftop", "A handful of desks under a pergola on top of an old house, with the best sunset in the city and a strict quiet rule until noon."},
		{"Santos Studio", "Popular with architects and photographers thanks to its huge windows and north light; the community manager knows every supplier in the neighbourhood."},
		{"Beato Hub", "Part of the creative district around the old military bakery, with a large event hall, a startup programme and a canteen that serves fish on Thursdays."},
		{"Ribeira Desk", "A simple, affordable space above a market hall, where a day pass includes soup at lunch and the internet connection is doubled by a fibre backup."},
		{"Belém Quarters", "Further west, near the monastery; calmer than the centre, with bike storage, showers and a running club that meets at seven every Wednesday."},
		{"Tejo Commons", "A cooperative owned by its members, who vote on the prices and the events; newcomers are welcomed with a breakfast on their first Monday."},
	}
	var b strings.Builder
	for _, sp := range spaces {
		b.WriteString("<li><strong>" + sp.name + ".</strong> " + sp.text + "</li>")
	}
	return b.String()
}

// Demo returns the demo posts. Published posts carry fixed dates so that a
// second run changes nothing; the scheduled post is always 30 days after now,
// so it stays in the future whenever the seed runs.
func Demo(now time.Time) []postbus.NewPost {
	scheduled := now.UTC().Truncate(24*time.Hour).AddDate(0, 0, 30).Add(9 * time.Hour)
	return []postbus.NewPost{
		{
			Title:   "How to write a community manager job ad that gets replies",
			Slug:    "community-manager-job-ad",
			Excerpt: "Describe the members, show a typical week, publish the salary range: four habits of job ads that good community managers answer.",
			BodyHTML: "<h2>Start with the members, not the tasks</h2>\n" + paragraphs(
				"The best community managers we have hired all told us the same thing: they applied because the ad described the people they would look after. Who are your members? Freelance designers, a climate-tech startup on the second floor, a group of translators who meet every Thursday? Say so in the first paragraph.",
				"Then describe a normal week. Candidates want to picture Monday morning: opening the space, answering the Slack channel, running the onboarding tour, planning the monthly members' breakfast. A list of twenty responsibilities tells them nothing about the rhythm of the job.",
			) + "<h2>Be honest about hours and pay</h2>\n" + paragraphs(
				"Coworking spaces open early and host evening events. If the role includes two evenings a month, write it down. Ads with a salary range get noticeably more replies on coworkjobs than ads without one, and the replies come from better-matched people.",
				"Finally, tell applicants what happens next: a short call, a trial afternoon in the space, a decision within two weeks. A clear process is a sign of a well-run community, and good candidates notice.",
			) + `<ul><li>Describe the members first</li><li>Show a typical week</li><li>Publish the salary range</li><li>Explain the hiring steps</li></ul>`,
			Status: postbus.StatusPublished, PublishedAt: at("2026-11-18T09:00:00Z"),
			Authors: []postbus.Author{mara}, Categories: []postbus.Term{catCareers},
			Tags: tags("hiring", "community-management", "job-ads"),
		},
		{
			Title: "Ten coworking spaces in Lisbon with a view of the river",
			Slug:  "lisbon-coworking-river-view",
			BodyHTML: paragraphs(
				"Lisbon has become one of Europe's favourite cities for remote workers, and its coworking scene has grown with it. We visited ten spaces between Cais do Sodré and Marvila that share one thing: you can see the Tagus from your desk.",
				"Prices range from 12 euros for a day pass to 250 euros a month for a fixed desk. Most spaces include coffee, meeting-room credits and a community event every week. Several have rooftop terraces that double as meeting rooms for most of the year.",
				"Our favourites were the converted warehouses in Marvila, where the ceilings are high, the rents are still reasonable and the neighbourhood is full of small galleries and breweries. Closer to the centre, the spaces around Cais do Sodré are busier and better connected, with trains to the beaches of Cascais a few minutes away.",
			) + "<h2>The ten spaces</h2>\n<ol>" + lisbonSpaces() + "</ol>\n" +
				`<p>See every confirmed space on the <a href="https://coworkjobs.example/cities/lisbon">Lisbon city page</a>.</p>`,
			Status: postbus.StatusPublished, PublishedAt: at("2026-11-12T08:30:00Z"),
			Authors: []postbus.Author{tomas}, Categories: []postbus.Term{catSpaces},
			Tags: tags("lisbon", "portugal", "city-guide"),
		},
		{
			Title: "What a space host actually does all day",
			Slug:  "what-a-space-host-does",
			BodyHTML: paragraphs(
				"Space host, community host, front of house: the titles vary, but the job is the heartbeat of a coworking space. We spent a day with Lea, who hosts a 180-desk space in Berlin Kreuzberg.",
				"Her day starts at 7:45 with a walk through the floors: lights, coffee machines, the meeting-room screens that never seem to connect on Mondays. By nine she is welcoming day-pass guests and answering questions about invoices, mail and the printer.",
				"Afternoons belong to the members. Lea introduces a freelance developer to a startup that needs one, helps plan a book club and quietly solves a disagreement about the phone booths. 'The best days are the ones nobody notices,' she says.",
			),
			Status: postbus.StatusPublished, PublishedAt: at("2026-11-05T10:00:00Z"),
			Authors: []postbus.Author{mara, aiko}, Categories: []postbus.Term{catCareers, catCommunity},
			Tags: tags("space-host", "berlin", "day-in-the-life"),
		},
		{
			Title: "Remote, hybrid or in the space: how our members work in 2026",
			Slug:  "how-members-work-2026",
			BodyHTML: paragraphs(
				"We asked 2,400 members of coworking spaces across 40 cities how they split their week. The answers surprised us: fewer than one in five work fully remotely from home, and almost half come to a coworking space three days a week or more.",
				"The main reason is not the desk, but the people. Members told us they come for the conversations at the coffee machine, the events and the feeling of leaving home for work. Quiet rooms and good internet came second and third.",
				"Employers are noticing. More and more companies pay for coworking memberships as a benefit, and a growing share of the jobs on coworkjobs mention a coworking allowance in the description.",
			) + "<h2>Method</h2>" + paragraphs("The survey ran in October 2026 in eight languages. Answers were weighted by city size."),
			Status: postbus.StatusPublished, PublishedAt: at("2026-10-28T07:00:00Z"),
			Authors: []postbus.Author{jonas}, Categories: []postbus.Term{catRemote},
			Tags: tags("survey", "hybrid-work", "remote-work"),
		},
		{
			Title: "Introducing the coworkjobs API v2",
			Slug:  "introducing-api-v2",
			BodyHTML: paragraphs(
				"Today we are opening version 2 of the coworkjobs API. Spaces can publish their job offers directly from their own tools, and partners can read jobs, cities, spaces, events and this blog through one consistent interface.",
				"Every response uses the same envelope, every error has a stable code, and validation problems are listed all at once. Keys are scoped: a key created from a space dashboard only ever sees that space's data.",
			) + `<pre><code>curl -H "X-API-Key: svc_live_..." https://coworkjobs.example/v2/jobs</code></pre>` +
				`<p>The full reference lives in the <a href="https://coworkjobs.example/v2/openapi.json">OpenAPI document</a>.</p>` +
				// An analytics snippet pasted by an editor: stored as written,
				// removed by the sanitiser before it is ever served.
				`<script>window.analytics && analytics.track("api-v2-post")</script>`,
			Status: postbus.StatusPublished, PublishedAt: at("2026-10-20T12:00:00Z"),
			Authors: []postbus.Author{jonas, tomas}, Categories: []postbus.Term{catNews},
			Tags: tags("api", "developers", "announcement"),
		},
		{
			Title: "Five events that turn members into a community",
			Slug:  "five-community-events",
			BodyHTML: "<ol><li><strong>The monthly breakfast.</strong> Cheap, early and easy to join.</li>" +
				"<li><strong>Show and tell.</strong> Three members, five minutes each, about anything they are working on.</li>" +
				"<li><strong>Skill swaps.</strong> One member teaches, the others bring questions.</li>" +
				"<li><strong>The neighbourhood walk.</strong> Lunch somewhere new, once a month.</li>" +
				"<li><strong>The end-of-year party.</strong> Invite members' families.</li></ol>" + paragraphs(
				"None of these need a big budget. They need a host who remembers names and a calendar members can trust. Post them on coworkjobs events so that people in the city can find them too.",
			),
			Status: postbus.StatusPublished, PublishedAt: at("2026-10-14T09:00:00Z"),
			Authors: []postbus.Author{aiko}, Categories: []postbus.Term{catCommunity},
			Tags: tags("events", "community-management"),
		},
		{
			Title: "Working from Mexico City: a coworking guide",
			Slug:  "mexico-city-coworking-guide",
			BodyHTML: paragraphs(
				"Roma and Condesa are where most remote workers end up in Mexico City, and the coworking spaces follow them: leafy streets, cafés on every corner and spaces in restored art-deco houses.",
				"Expect to pay between 250 and 400 pesos for a day pass. Internet is generally excellent, but ask about backup connections: the rainy season brings the occasional outage. Many spaces offer Spanish classes and salsa nights to their members.",
			),
			Status: postbus.StatusPublished, PublishedAt: at("2026-10-02T15:00:00Z"),
			Authors: []postbus.Author{tomas}, Categories: []postbus.Term{catSpaces, catRemote},
			Tags: tags("mexico-city", "city-guide", "digital-nomads"),
		},
		{
			Title: "Salary guide: operations and community roles in coworking",
			Slug:  "salary-guide-coworking-roles",
			BodyHTML: paragraphs(
				"How much does a community manager earn in Amsterdam compared with Madrid? We looked at 3,100 job ads published on coworkjobs with a salary range in the last twelve months.",
				"Community managers earn a median of 38,000 euros a year in Western Europe, with Amsterdam, Munich and Zurich well above and Lisbon, Madrid and Athens below. Operations managers earn roughly a third more, and general managers of large spaces often twice as much.",
				"Ads that publish a range receive more applications, and the ranges themselves have become narrower: employers increasingly mean what they write.",
			) + "<table><tr><th>Role</th><th>Median (EUR)</th></tr><tr><td>Community manager</td><td>38,000</td></tr><tr><td>Operations manager</td><td>51,000</td></tr><tr><td>General manager</td><td>74,000</td></tr></table>",
			Status: postbus.StatusPublished, PublishedAt: at("2026-09-22T08:00:00Z"),
			Authors: []postbus.Author{jonas, mara}, Categories: []postbus.Term{catCareers},
			Tags: tags("salaries", "hiring", "survey"),
		},
		{
			Title: "Quiet hours, phone booths and other house rules that work",
			Slug:  "house-rules-that-work",
			BodyHTML: paragraphs(
				"Every space has rules; the good ones are few, visible and explained. We collected the house rules of 60 spaces and asked their hosts which ones members actually follow.",
				"Quiet hours in the morning work well when the space also has a loud zone. Phone booths need a time limit, a booking system or both. And a clean-desk rule is easier to keep when there are lockers nearby.",
			),
			Status: postbus.StatusPublished, PublishedAt: at("2026-09-10T09:30:00Z"),
			Authors: []postbus.Author{aiko}, Categories: []postbus.Term{catCommunity, catSpaces},
			Tags: tags("operations", "house-rules"),
		},
		{
			Title: "Events on coworkjobs: publish once, reach the whole city",
			Slug:  "events-on-coworkjobs",
			BodyHTML: paragraphs(
				"Spaces can now publish their events on coworkjobs, and everyone following their city sees them in the events feed. Online events appear for all cities.",
				"Use the same API key you use for jobs; a key created from your space dashboard can only publish and read your own space's events.",
			),
			Status: postbus.StatusPublished, PublishedAt: at("2026-08-30T11:00:00Z"),
			Authors: []postbus.Author{jonas}, Categories: []postbus.Term{catNews},
			Tags: tags("events", "announcement"),
		},
		{
			Title: "Draft: our 2027 coworking trends report",
			Slug:  "coworking-trends-2027",
			BodyHTML: paragraphs(
				"This report is still being written. It will cover membership prices, the growth of suburban spaces and the rise of corporate memberships.",
			),
			Status:  postbus.StatusDraft,
			Authors: []postbus.Author{mara}, Categories: []postbus.Term{catRemote},
			Tags: tags("trends", "survey"),
		},
		{
			Title: "Hiring for the new year: what candidates ask in interviews",
			Slug:  "candidate-interview-questions",
			BodyHTML: paragraphs(
				"Candidates for community roles ask about the members, the team and the events calendar far more often than about perks. We asked twenty hiring managers which questions impressed them most.",
				"This post is scheduled: it appears in the blog and the feed only once its publication time has come.",
			),
			Status: postbus.StatusPublished, PublishedAt: scheduled,
			Authors: []postbus.Author{mara, jonas}, Categories: []postbus.Term{catCareers},
			Tags: tags("hiring", "interviews"),
		},
	}
}

// Load writes posts through the blog rules; posts are keyed by slug, so
// loading twice leaves one copy of each.
func Load(ctx context.Context, bus *postbus.Business, posts []postbus.NewPost) error {
	for _, p := range posts {
		if _, err := bus.Upsert(ctx, p); err != nil {
			return fmt.Errorf("seed post %s: %w", p.Slug, err)
		}
	}
	return nil
}
