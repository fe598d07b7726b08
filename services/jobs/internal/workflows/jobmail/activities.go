package jobmail

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus"
)

// Activities hold what the mail activity needs.
type Activities struct {
	Jobs *jobbus.Business
	Mail mailer.Sender
	// Stats gives the reminder the job's totals (nil: a reminder without them).
	Stats statsbus.Reader
}

// SendJobMail sends the mail in describes, when the job is still in the
// state the mail is about: a reminder only for a job still active with that
// expiration date, an expiry mail only for an expired job.
func (a *Activities) SendJobMail(ctx context.Context, in Input) (string, error) {
	d, err := a.Jobs.QueryByID(ctx, in.JobID)
	if errors.Is(err, jobbus.ErrNotFound) {
		return ResultSkipped, nil
	}
	if err != nil {
		return "", err
	}
	if !validAddress(d.InvEmail) {
		activity.GetLogger(ctx).Warn("job mail skipped: the poster's address is not one", "job_id", in.JobID)
		return ResultSkipped, nil
	}
	var totals *statsbus.Counts
	if in.Kind == KindReminder && a.Stats != nil {
		// The numbers are a courtesy: without them the reminder still goes.
		if c, err := statsbus.Totals(ctx, a.Stats, d.ID, d.DateAdded, time.Now()); err == nil {
			totals = &c
		} else {
			activity.GetLogger(ctx).Warn("reminder without the job's totals", "job_id", d.ID, "error", err)
		}
	}
	m, ok := ComposeWith(in, d, a.Jobs.Links(d), totals)
	if !ok {
		return ResultSkipped, nil
	}
	if err := a.Mail.Send(ctx, m); err != nil {
		return "", fmt.Errorf("mail %s of job %d: %w", in.Kind, in.JobID, err)
	}
	return ResultSent, nil
}

// Compose writes the mail, false when the job is no longer in the state it
// is about.
func Compose(in Input, d jobbus.Detail, l jobbus.Links) (mailer.Message, bool) {
	return ComposeWith(in, d, l, nil)
}

// ComposeWith is Compose with the job's totals for a reminder (nil: none).
func ComposeWith(in Input, d jobbus.Detail, l jobbus.Links, totals *statsbus.Counts) (mailer.Message, bool) {
	var b strings.Builder
	line := func(s ...string) { b.WriteString(strings.Join(s, "")); b.WriteByte('\n') }
	day := func(t time.Time) string { return t.UTC().Format("2 January 2006") }
	m := mailer.Message{To: d.InvEmail}
	line("Hello,")
	line()
	switch in.Kind {
	case KindCreated:
		switch {
		case d.Status == jobbus.StatusActive:
			m.Subject = fmt.Sprintf("Your job %q is live", d.Title)
			line("your job \"", d.Title, "\" at ", d.Company, " is published until ", day(d.ExpirationDate), ".")
		case l.PaymentURL != nil:
			m.Subject = fmt.Sprintf("Your job %q: one step left", d.Title)
			line("your job \"", d.Title, "\" at ", d.Company, " is saved as a draft. It is published as soon as the ",
				d.Plan.Name, " plan (", strconv.Itoa(d.Plan.Price), " ", d.Plan.Currency, ") is paid.")
		default:
			m.Subject = fmt.Sprintf("Your job %q is saved as a draft", d.Title)
			line("your job \"", d.Title, "\" at ", d.Company, " is saved as a draft: review it and publish it from its page.")
		}
	case KindReminder:
		if d.Status != jobbus.StatusActive || !d.ExpirationDate.Equal(in.ExpiresAt) {
			return mailer.Message{}, false
		}
		m.Subject = fmt.Sprintf("Your job %q expires on %s", d.Title, day(d.ExpirationDate))
		line("your job \"", d.Title, "\" at ", d.Company, " leaves the listing on ", day(d.ExpirationDate), ".")
		line("Once it has expired you can relist it from its page for another ", strconv.Itoa(d.Plan.ExpirationDays), " days.")
		if totals != nil {
			line()
			line("So far it has had ", n(totals.Views), " views (", n(totals.UniqueViews), " unique a day), ",
				n(totals.Clicks), " apply clicks (", n(totals.UniqueClicks), " unique a day) and ",
				n(totals.Impressions), " impressions in lists, feeds and embeds.")
		}
	case KindExpired:
		if d.Status != jobbus.StatusExpired {
			return mailer.Message{}, false
		}
		m.Subject = fmt.Sprintf("Your job %q has expired", d.Title)
		line("your job \"", d.Title, "\" at ", d.Company, " has expired and left the listing.")
		line("Still hiring? Relist it from its page for another ", strconv.Itoa(d.Plan.ExpirationDays), " days.")
	default:
		return mailer.Message{}, false
	}
	line()
	if l.ViewURL != nil {
		line("Public page: ", *l.ViewURL)
	}
	if l.PaymentURL != nil {
		line("Pay: ", *l.PaymentURL)
	}
	line("Review, edit, publish or relist: ", l.EditURL)
	line("Take it down: ", l.UnpublishURL)
	line()
	line("Keep this mail: these links are the keys to your job.")
	m.Text = b.String()
	return m, true
}

func n(v int64) string { return strconv.FormatInt(v, 10) }

// validAddress: a bare address a mail can go to. A bad one is skipped, not
// retried: no retry makes it valid.
func validAddress(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s
}
