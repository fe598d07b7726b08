package changes

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Memo is a number computed from what some scopes' versions name (a
// listing's exact total), kept in Redis with the versions it was computed
// under: it holds while they do, so a write that moved them is never
// answered with a number from before it. At is when it was computed (the
// database's now()) and Until when what it counts next changes with time
// alone (a job's expiry; zero: never), for the reader to correct it.
type Memo struct {
	Versions  []uint64
	Value     int64
	At, Until time.Time
	// Data is whatever else was computed with Value and holds as long
	// (a listing's search plan); any text.
	Data string
	// Found: the memo is there and its versions are the current ones.
	Found bool
}

// memoKey names a memo; in the versions' hash slot, so that one MGET reads
// both on a Redis Cluster too.
func (v *Versions) memoKey(name string) string { return v.prefix + "cv:{cv}:memo:" + name }

// ReadMemo reads the scopes' current versions and the memo name in one
// round trip. Without a counter (ErrMissing) nothing may be memoised; with
// the versions read and no valid memo, Found is false and Versions are what
// a memo computed from now on must be written under (WriteMemo).
func (v *Versions) ReadMemo(ctx context.Context, name string, scopes ...string) (Memo, error) {
	if v == nil {
		return Memo{}, ErrMissing
	}
	if err := v.ready(ctx); err != nil {
		return Memo{}, fmt.Errorf("read memo: %w", err)
	}
	keys := make([]string, 0, len(scopes)+2)
	for _, s := range scopes {
		keys = append(keys, v.key(s))
	}
	keys = append(keys, v.key(epochScope), v.memoKey(name))
	vals, err := v.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return Memo{}, fmt.Errorf("read memo: %w", v.failed(ctx, err))
	}
	var m Memo
	if m.Versions, err = appendVersions(nil, vals[:len(scopes)+1], nil); err != nil {
		return Memo{}, err
	}
	if s, ok := vals[len(scopes)+1].(string); ok {
		m.Found = m.decode(s)
	}
	return m, nil
}

// decode reads "v1,v2|value|at|until[|data]" (Unix microseconds, until 0 for
// none) into m when its versions are m.Versions.
func (m *Memo) decode(s string) bool {
	f := strings.SplitN(s, "|", 5)
	if len(f) < 4 || f[0] != joinVersions(m.Versions) {
		return false
	}
	if len(f) == 5 {
		m.Data = f[4]
	}
	var n [3]int64
	for i := range n {
		var err error
		if n[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return false
		}
	}
	m.Value, m.At = n[0], time.UnixMicro(n[1])
	if n[2] != 0 {
		m.Until = time.UnixMicro(n[2])
	}
	return true
}

func joinVersions(vs []uint64) string {
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(v, 10))
	}
	return b.String()
}

// WriteMemo keeps m (Versions as ReadMemo returned them before the value
// was computed) for ttl. A memo computed under older versions may overwrite
// a newer one: the next read then misses, it never takes the older value.
func (v *Versions) WriteMemo(ctx context.Context, name string, m Memo, ttl time.Duration) error {
	if v == nil {
		return nil
	}
	var until int64
	if !m.Until.IsZero() {
		until = m.Until.UnixMicro()
	}
	val := joinVersions(m.Versions) + "|" + strconv.FormatInt(m.Value, 10) + "|" + strconv.FormatInt(m.At.UnixMicro(), 10) +
		"|" + strconv.FormatInt(until, 10)
	if m.Data != "" {
		val += "|" + m.Data
	}
	if err := v.ready(ctx); err != nil {
		return fmt.Errorf("write memo: %w", err)
	}
	if err := v.rdb.Set(ctx, v.memoKey(name), val, ttl).Err(); err != nil {
		return fmt.Errorf("write memo: %w", v.failed(ctx, err))
	}
	return nil
}
