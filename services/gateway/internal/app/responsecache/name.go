package responsecache

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/auth"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/routes"
)

// name computes the request's id (path, query, key: the cache's key), the
// answer's name (the request and the current versions; the entry's check)
// and its ETag; ok is false when the versions cannot be read (the answer is
// then neither named nor cached). With a store that reads its entries with
// the versions and fetch, the request's entry comes in the same round trip.
// The hash is FNV-1a, not maphash: every gateway replica and restart must
// give the same request the same ETag and id.
func (rc *Cache) name(ctx context.Context, c *fiber.Ctx, r routes.Route, id identity.Identity, n *Request, fetch bool) bool {
	now := time.Now().UnixNano()
	if now < rc.pauseUntil.Load() {
		return false
	}
	var nameBuf [256]byte // on the stack unless a name outgrows it
	b := nameBuf[:0]
	b = append(b, rc.salt...)
	b = append(b, 0)
	b = append(b, c.Path()...)
	b = append(b, '?')
	b = append(b, auth.WithoutAPIKey(c.Request().URI().QueryString())...)
	b = append(b, 0)
	b = binary.AppendVarint(b, id.KeyID)
	n.ID = fnv64a(b)
	var buf [4]uint64
	var vs []uint64
	var err error
	if fetch && rc.withVersions {
		// An absent entry leaves n.Entry empty, which matches no name.
		vs, n.Entry, _, err = rc.versions.ReadEntry(ctx, buf[:0], n.EntryID(), r.Cache.Scopes(id.SpaceID)...)
		n.Fetched = true
	} else {
		vs, err = rc.versions.Read(ctx, buf[:0], r.Cache.Scopes(id.SpaceID)...)
	}
	if err != nil {
		if !errors.Is(err, changes.ErrMissing) {
			rc.pauseUntil.Store(now + int64(time.Second))
		}
		return false
	}
	b = append(b, 0)
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	if r.Cache.Bucket > 0 {
		b = binary.AppendVarint(b, now/int64(r.Cache.Bucket))
	}
	sum := fnv64a(b)
	n.Name, n.etag = string(b), `W/"`+strconv.FormatUint(sum, 36)+`"`
	return true
}

// fnv64a is hash/fnv's 64-bit FNV-1a without its hash.Hash64: through the
// interface the name's buffer escaped to the heap on every request.
func fnv64a(b []byte) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, c := range b {
		h ^= uint64(c)
		h *= prime
	}
	return h
}
