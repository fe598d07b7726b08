package jobbus

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// Every state answers every event: a change, or a 409 with a reason.
func TestTableIsComplete(t *testing.T) {
	now := time.Now()
	for _, s := range States {
		for _, ev := range append(slices.Clone(RouteEvents), EventUpdate, EventExpire, EventPaid) {
			for _, paid := range []bool{false, true} {
				for _, price := range []int{0, 49} {
					f := facts{job: Detail{Status: s, IsPaid: paid, Plan: Plan{Price: price}}, now: now}
					f.job.ExpirationDate = now.Add(-time.Minute)
					c, err := decide(f, ev)
					var ce *ConflictError
					switch {
					case errors.As(err, &ce):
						if ce.Message == "" || ce.Status != s {
							t.Errorf("%s/%s: refusal without a reason: %+v", s, ev, ce)
						}
					case err != nil:
						t.Errorf("%s/%s: %v", s, ev, err)
					case c.To == "" || c.Action == "" || c.From != s:
						t.Errorf("%s/%s: incomplete change %+v", s, ev, c)
					case c.To == s && c.Writes() && c.Action[:min(8, len(c.Action))] == "already_":
						t.Errorf("%s/%s: an already_ answer writes", s, ev)
					}
				}
			}
		}
	}
}

func TestRulesOfTheTable(t *testing.T) {
	if InitialStatus(true) != StatusActive || InitialStatus(false) != StatusDraft {
		t.Fatal("initial status: Pro or trusted active, else draft")
	}
	from, to, refresh := UpdateMoves(true)
	if !slices.Equal(from, []string{StatusDraft}) || !slices.Equal(to, []string{StatusActive}) {
		t.Fatalf("a qualified update publishes a draft only: %v → %v", from, to)
	}
	if !slices.Equal(refresh, []string{StatusDraft, StatusActive}) {
		t.Fatalf("an update refreshes the plan of drafts and active jobs only: %v", refresh)
	}
	if from, _, _ := UpdateMoves(false); len(from) != 0 {
		t.Fatalf("an unqualified update moves nothing: %v", from)
	}
	if from, to := ExpiryMoves(); !slices.Equal(from, []string{StatusActive}) || to != StatusExpired {
		t.Fatalf("expiry: %v → %s", from, to)
	}
	// A paid plan's draft is published by its payment, not by publish.
	f := facts{job: Detail{Status: StatusDraft, Plan: Plan{Price: 49}}, now: time.Now()}
	if _, err := decide(f, EventPublish); err == nil || !needsPayment(f, EventPublish) {
		t.Fatal("an unpaid paid plan must not publish")
	}
	c, err := decide(f, EventPaid)
	if err != nil || c.To != StatusActive || !c.MarkPaid() || !c.NewPeriod() || !c.Schedule() {
		t.Fatalf("payment of a draft: %+v %v", c, err)
	}
	// Pausing stops the clock, resuming restarts and re-arms it.
	c, _ = decide(facts{job: Detail{Status: StatusActive}}, EventPause)
	if !c.StopClock() || c.Schedule() {
		t.Fatalf("pause: %+v", c)
	}
	c, _ = decide(facts{job: Detail{Status: StatusPaused}}, EventResume)
	if !c.RestartClock() || !c.Schedule() {
		t.Fatalf("resume: %+v", c)
	}
	// An active job not yet due stays active.
	d := Detail{Status: StatusActive}
	d.ExpirationDate = time.Now().Add(time.Hour)
	c, _ = decide(facts{job: d, now: time.Now()}, EventExpire)
	if c.To != StatusActive || c.Writes() {
		t.Fatalf("not due: %+v", c)
	}
}

// Every change that writes has its events, and only those: one per state
// move (named by the action), job.paid first for a payment, none for an
// answer that changes nothing. Fingerprint updates are the upsert's
// job.updated (stores/jobdb), not a Change's.
func TestEveryChangeHasItsEvents(t *testing.T) {
	now := time.Now()
	for _, s := range States {
		for _, ev := range append(slices.Clone(RouteEvents), EventExpire, EventPaid) {
			for _, paid := range []bool{false, true} {
				for _, price := range []int{0, 49} {
					f := facts{job: Detail{Status: s, IsPaid: paid, Plan: Plan{Price: price}}, now: now}
					f.job.ExpirationDate = now.Add(-time.Minute)
					c, err := decide(f, ev)
					if err != nil {
						continue
					}
					if ev == EventPaid {
						c.Payment = &Payment{JobID: 1, Provider: "invoice", Reference: "R"}
					}
					evs := c.Events()
					if !c.Writes() {
						if len(evs) != 0 {
							t.Errorf("%s/%s: writes nothing but has events %v", s, ev, evs)
						}
						continue
					}
					var want []string
					if ev == EventPaid {
						want = append(want, TypePaid)
					}
					if c.To != c.From || c.NewPeriod() || c.RestartClock() {
						want = append(want, actionTypes[c.Action])
					}
					if !slices.Equal(evs, want) || len(evs) == 0 || slices.Contains(evs, "") {
						t.Errorf("%s/%s (paid %v, price %d): events %v, want %v", s, ev, paid, price, evs, want)
					}
					for _, e := range evs {
						if !slices.Contains(EventTypes, e) {
							t.Errorf("%s/%s: unknown event type %q", s, ev, e)
						}
					}
				}
			}
		}
	}
}
