package alertmail

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus"
)

// DigestBatch is how many alerts one digest statement takes.
const DigestBatch = 500

// Activities are the alert mails' and the digest clock's activities; they
// compose with the relay's mails (ConfirmMail, MatchMail, DigestMail).
type Activities struct {
	Mails *Relay
	// Stats counts the jobs a sent mail shows as impressions of channel
	// alert (nil: not counted).
	Stats StatsWriter
}

// StatsWriter stores counted events (statsdb.Store).
type StatsWriter interface {
	Write(ctx context.Context, events []statsbus.Event) error
}

// TakeDigests is the digest clock's tick at the workflow's time at (never
// the wall clock's: the tests skip time): the alerts due by then have
// their pairs marked sent and a digest queued (alertbus.MailStorer.TakeDigests).
func (a *Activities) TakeDigests(ctx context.Context, at time.Time) (TickResult, error) {
	n, d, err := a.Mails.Store.TakeDigests(ctx, at.Truncate(time.Microsecond), DigestBatch)
	return TickResult{Alerts: n, Digests: d}, err
}

// SendAlertMail sends one alert mail. It is idempotent per outbox row: its
// workflow's id is the row's (alert, job) pair or (alert, morning), and a
// mail with nothing left to tell (the alert deleted, a confirmed alert's
// confirmation, a job gone, a digest whose jobs all left) is skipped.
func (a *Activities) SendAlertMail(ctx context.Context, in MailInput) (string, error) {
	r := a.Mails
	al, err := r.Store.Get(ctx, in.AlertID)
	if errors.Is(err, alertbus.ErrNotFound) {
		return ResultSkipped, nil
	}
	if err != nil {
		return "", err
	}
	var msg mailer.Message
	var shown []int64 // the jobs the mail shows
	switch in.Kind {
	case KindConfirm:
		// The address's confirmation: every search still pending when it
		// goes, not only the one that queued it.
		pending, err := r.Store.Pending(ctx, al.ID, alertbus.MaxPendingShown)
		if err != nil {
			return "", err
		}
		if len(pending) == 0 {
			return ResultSkipped, nil
		}
		msg = r.ConfirmMail(pending)
	case KindMatch:
		d, err := r.Jobs.QueryByID(ctx, in.JobID)
		if errors.Is(err, jobbus.ErrNotFound) {
			return ResultSkipped, nil
		}
		if err != nil {
			return "", err
		}
		msg = r.MatchMail(al, d.Job)
		shown = []int64{d.ID}
	case KindDigest:
		if al.Paused {
			return ResultSkipped, nil
		}
		ids, err := r.Store.DigestJobs(ctx, al.ID, in.DigestAt, MaxDigestJobs)
		if err != nil {
			return "", err
		}
		jobs := make([]jobbus.Job, 0, len(ids))
		for _, id := range ids {
			d, err := r.Jobs.QueryByID(ctx, id)
			if errors.Is(err, jobbus.ErrNotFound) {
				continue
			}
			if err != nil {
				return "", err
			}
			jobs = append(jobs, d.Job)
		}
		if len(jobs) == 0 {
			return ResultSkipped, nil
		}
		msg = r.DigestMail(al, jobs)
		for _, j := range jobs {
			shown = append(shown, j.ID)
		}
	default:
		return ResultSkipped, nil
	}
	if err := r.Mail.Send(ctx, msg); err != nil {
		return "", fmt.Errorf("alert mail %s: %w", in.Kind, err)
	}
	if a.Stats != nil && len(shown) > 0 {
		// After the send, and never failing the activity: a retry would mail
		// the seeker twice for an impression. A lost count is logged.
		now := time.Now()
		events := make([]statsbus.Event, len(shown))
		for i, id := range shown {
			events[i] = statsbus.Event{JobID: id, Kind: statsbus.KindImpression, Channel: statsbus.ChannelAlert, At: now, N: 1}
		}
		if err := a.Stats.Write(ctx, events); err != nil {
			activity.GetLogger(ctx).Warn("alert mail sent; its impressions not counted", "alert_id", in.AlertID, "error", err)
		}
	}
	return ResultSent, nil
}
