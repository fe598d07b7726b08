// Package redisstore keeps the response cache's answers in Redis, shared by
// every gateway replica: an entry is read in the same MGET as the change
// versions (libs/changes.Coalesced.ReadEntry) and written after the answer
// in pipelined batches, off the request's path; one miss per version for the
// whole deployment and no answers in the gateway's heap. Entries expire
// after their TTL; Redis's maxmemory bounds the total. A doorkeeper admits
// only the answers asked for twice.
package redisstore

import (
	"context"
	"encoding/binary"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/responsecache"
)

// Store implements responsecache.Storer in Redis.
type Store struct {
	v    *changes.Versions
	w    *entryWriter
	seen *doorkeeper // admits an answer asked for twice
}

// New returns a store whose entries live ttl beside the versions v; reg
// receives its instruments (nil: none). Run writes its entries.
func New(v *changes.Versions, ttl time.Duration, reg *prometheus.Registry) *Store {
	return &Store{v: v, w: newEntryWriter(v, ttl, reg), seen: newDoorkeeper(doorkeeperSlots)}
}

// Run writes the queued entries until ctx ends.
func (s *Store) Run(ctx context.Context) { s.w.run(ctx) }

// ReadsWithVersions is true: an entry comes in the versions' MGET.
func (s *Store) ReadsWithVersions() bool { return true }

// Get returns the answer named r.Name, if kept.
func (s *Store) Get(ctx context.Context, r *responsecache.Request) (*responsecache.Answer, bool) {
	if !r.Fetched {
		// A conditional request whose copy was not current: its entry
		// was not read with the versions, to spare every 304 the body.
		e, found, err := s.v.ReadEntry(ctx, r.EntryID())
		if err != nil || !found {
			return nil, false
		}
		r.Entry = e
	}
	return decodeEntry(r.Entry, r.Name)
}

// Put queues an encoded copy of the answer, the second time this replica
// forwards its request.
func (s *Store) Put(r *responsecache.Request, contentType string, body []byte) {
	if !s.seen.admit(r.ID) {
		s.w.skipped.Inc()
		return
	}
	s.w.put(r.EntryID(), encodeEntry(r.Name, contentType, body))
}

// encodeEntry is a shared entry: the name, the content type (each with its
// length as a uvarint) and the body.
func encodeEntry(name, contentType string, body []byte) []byte {
	b := make([]byte, 0, 2*binary.MaxVarintLen32+len(name)+len(contentType)+len(body))
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	b = binary.AppendUvarint(b, uint64(len(contentType)))
	b = append(b, contentType...)
	return append(b, body...)
}

// decodeEntry returns the answer in entry when it is the one named name.
// The body is a view of the entry's string, which nothing writes to.
func decodeEntry(entry, name string) (*responsecache.Answer, bool) {
	field := func() (string, bool) {
		l, w := binary.Uvarint([]byte(entry[:min(len(entry), binary.MaxVarintLen64)]))
		if w <= 0 || uint64(len(entry)-w) < l {
			return "", false
		}
		f := entry[w : w+int(l)]
		entry = entry[w+int(l):]
		return f, true
	}
	got, ok := field()
	if !ok || got != name {
		return nil, false
	}
	ct, ok := field()
	if !ok {
		return nil, false
	}
	return &responsecache.Answer{Name: name, ContentType: ct, Body: unsafe.Slice(unsafe.StringData(entry), len(entry))}, true
}
