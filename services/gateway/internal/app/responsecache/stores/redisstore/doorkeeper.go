package redisstore

import "sync/atomic"

// doorkeeper remembers the requests whose answers were not kept yet, as
// TinyLFU's doorkeeper does: the shared store keeps an answer the second
// time this replica forwards its request. A request asked for once (a
// crawler's, or one made unique to get past the cache) then costs Redis
// neither a write nor its memory (make bench row am). Lossy and lock-free:
// one slot per request id modulo its size, the last id wins, so a collision
// at worst costs a request one more miss.
type doorkeeper struct{ slots []atomic.Uint64 }

const doorkeeperSlots = 1 << 16

func newDoorkeeper(n int) *doorkeeper { return &doorkeeper{slots: make([]atomic.Uint64, n)} }

// admit reports whether id was seen since its slot last changed hands, and
// remembers it otherwise.
func (d *doorkeeper) admit(id uint64) bool {
	slot := &d.slots[id%uint64(len(d.slots))]
	if slot.Load() == id {
		return true
	}
	slot.Store(id)
	return false
}
