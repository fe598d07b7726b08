package jobview

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Renderer renders changes for many readers of the same events (webhook
// endpoints): each event's body is rendered once per visibility (with the
// job, for a reader who may read it; without, for one who may not) and the
// job read once, however many readers render it while it is cached.
// Safe for concurrent use.
type Renderer struct {
	Jobs *jobbus.Business

	mu     sync.Mutex
	jobs   map[int64]jobbus.Detail // the jobs last read
	bodies map[bodyKey][]byte
}

type bodyKey struct {
	event    string
	readable bool
}

// maxCached bounds each cache: past it, it starts over.
const maxCached = 4096

// Changes returns the data of each of evs (ChangeJSON) for who. A cached job
// serves an event only when it is at or past the event's version: a body
// never shows a job older than its event.
func (r *Renderer) Changes(ctx context.Context, who jobbus.Caller, evs []jobbus.JobEvent) ([]json.RawMessage, error) {
	r.mu.Lock()
	if r.jobs == nil || len(r.jobs) > maxCached {
		r.jobs = map[int64]jobbus.Detail{}
	}
	if r.bodies == nil || len(r.bodies) > maxCached {
		r.bodies = map[bodyKey][]byte{}
	}
	var missing []int64
	seen := map[int64]bool{}
	for _, e := range evs {
		if d, ok := r.jobs[e.JobID]; (!ok || d.Version < e.Version) && !seen[e.JobID] {
			seen[e.JobID] = true
			missing = append(missing, e.JobID)
		}
	}
	r.mu.Unlock()
	var fresh []jobbus.Detail
	if len(missing) > 0 {
		var err error
		if fresh, err = r.Jobs.Details(ctx, missing); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range fresh {
		if old, ok := r.jobs[d.ID]; !ok || old.Version <= d.Version {
			r.jobs[d.ID] = d
		}
	}
	out := make([]json.RawMessage, len(evs))
	for i, e := range evs {
		ce := jobbus.ChangeEntry{Event: e, Status: e.Status}
		d, ok := r.jobs[e.JobID]
		readable := ok && r.Jobs.Readable(who, d)
		if ok {
			ce.Status = d.Status
			if readable {
				ce.Job = &d
			}
		}
		k := bodyKey{event: e.ID, readable: readable}
		if b, hit := r.bodies[k]; hit && ok {
			out[i] = b
			continue
		}
		b, err := ChangeJSON(r.Jobs, ce, who)
		if err != nil {
			return nil, err
		}
		r.bodies[k] = b
		out[i] = b
	}
	return out, nil
}
