// Package webhook delivers job events to webhook endpoints through
// Temporal. Each endpoint is a reader of the event log (eventbus) with its
// own position. One workflow per endpoint (EndpointWorkflow) supervises one
// long-running, heartbeating activity, the pump (Activities.Pump), that
// claims the endpoint's reader (a fenced lease) and each round reads the
// events past its position and its due retries, sends them (a job's one
// after the other, so a receiver never hears of a job's change before the
// one that preceded it; up to PumpConcurrency jobs at once) and moves the
// position, writing a delivery row only for a failure (retried after
// Backoff, with jitter, through next_try_at, for RetryFor) and the later
// events of its job, which wait behind it. A 410 disables the endpoint at
// once, DisableAfter of failures too (its owner mailed). The workflow
// sleeps on a Temporal timer until the next retry is due or the dispatch
// wakes it, and ends when nothing is pending; a worker killed mid-round
// loses its pump's heartbeat and Temporal runs the pump again elsewhere,
// whose claim fences the old one and which sends again only what was in
// flight. Each endpoint has its own pump and position: a slow or failing
// endpoint delays only its own messages. While a pump runs it holds the
// reader's lease and polls, so the dispatch wakes (signals) an endpoint
// only when its pump is not running.
//
// DeliveryWorkflow, the earlier design's workflow per (endpoint, job),
// is only a drain for its runs still open at an upgrade (legacy.go).
package webhook

import (
	"time"
)

// TaskQueue is the webhook workflows' queue, apart from the expiry's so
// that a burst of deliveries never delays a timer.
const TaskQueue = "jobs-webhooks"

// The retry rules.
const (
	MinBackoff   = 5 * time.Second
	MaxBackoff   = 2 * time.Hour
	RetryFor     = 72 * time.Hour
	DisableAfter = 5 * 24 * time.Hour
	// idle is how long a workflow with nothing to deliver waits for more
	// before it ends (the next delivery starts it again).
	idle = time.Minute
)

// HeartbeatTimeout: heartbeat sends one every HeartbeatTimeout/4 (the
// pump's own limit is PumpHeartbeatTimeout).
const HeartbeatTimeout = 8 * time.Second

// Backoff is the wait after the attempt-th failure: MinBackoff doubled per
// earlier failure, capped at MaxBackoff, drawn from [wait/2, wait] by
// jitter in [0, 1) so that deliveries that failed together do not retry in
// step.
func Backoff(attempt int, jitter float64) time.Duration {
	wait := MaxBackoff
	if attempt < 20 {
		if d := MinBackoff << attempt; d < MaxBackoff {
			wait = d
		}
	}
	return wait/2 + time.Duration(jitter*float64(wait/2))
}
