package alertmail

import (
	"strconv"
	"strings"

	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// MaxDigestJobs is the most jobs one digest lists (the newest matches; the
// others are marked sent with it and stay on the alert's feed).
const MaxDigestJobs = 50

// DigestMail lists a daily or weekly alert's new jobs, each with its title,
// company, city, salary and link, and the alert's management and one-click
// unsubscribe links (English: the board has no languages).
func (r *Relay) DigestMail(a alertbus.Alert, jobs []jobbus.Job) mailer.Message {
	manage := r.Link("manage", alertbus.PurposeManage, a)
	unsub := r.Link("unsubscribe", alertbus.PurposeManage, a)
	period := "today"
	if a.Frequency == alertbus.Weekly {
		period = "this week"
	}
	count := strconv.Itoa(len(jobs)) + " new jobs"
	if len(jobs) == 1 {
		count = "1 new job"
	}
	var text, html strings.Builder
	text.WriteString(count + " " + period + " match your alert (" + Describe(a.Search) + "):\n\n")
	html.WriteString("<p>" + esc(count+" "+period) + " match your alert (" + esc(Describe(a.Search)) + "):</p><ul>")
	for _, j := range jobs {
		// ?ref=alert: the page's view and its Apply click count under the
		// alert channel (statsbus).
		jobURL := r.Jobs.JobURL(jobbus.PageURL(j.Slug, j.ID)) + "?ref=alert"
		facts := []string{j.Company, j.CityName}
		if s := salary(j); s != "" {
			facts = append(facts, s)
		}
		text.WriteString("- " + j.Title + "\n  " + strings.Join(facts, ", ") + "\n  " + jobURL + "\n\n")
		html.WriteString("<li><a href=\"" + esc(jobURL) + "\">" + esc(j.Title) + "</a><br>" + esc(strings.Join(facts, " · ")) + "</li>")
	}
	text.WriteString("Manage the alert: " + manage + "\nUnsubscribe: " + unsub + "\n")
	html.WriteString("</ul><p><a href=\"" + esc(manage) + "\">Manage the alert</a> · <a href=\"" + esc(unsub) +
		"\">Unsubscribe</a></p>")
	subject := "Your job alert: " + count + " " + period
	return r.WithErasure(mailer.Message{To: a.Email, Subject: subject, Text: text.String(), HTML: html.String(), ListUnsubscribe: unsub})
}
