package jobsearch

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Key names a listing's total: its count's statement and arguments, hashed
// (the same jobs, the same name, whatever the page, sort or reader).
func Key(f jobbus.ListFilter) string {
	q, args := countSQL(planned(f, nil))
	h := fnv.New128a()
	_, _ = h.Write([]byte(q))
	b := make([]byte, 0, 256)
	for _, a := range args {
		b = appendKeyArg(append(b[:0], 0), a)
		_, _ = h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// appendKeyArg writes a statement argument for Key, its type first (1 and
// "1" must name different totals); the types listings send without fmt's
// reflection (BenchmarkCountKey), anything else with it.
func appendKeyArg(b []byte, a any) []byte {
	switch v := a.(type) {
	case string:
		return append(append(b, 's'), v...)
	case int:
		return strconv.AppendInt(append(b, 'i'), int64(v), 10)
	case int64:
		return strconv.AppendInt(append(b, 'I'), v, 10)
	case float64:
		return strconv.AppendFloat(append(b, 'f'), v, 'g', -1, 64)
	case bool:
		return strconv.AppendBool(append(b, 'b'), v)
	case []string:
		b = append(b, 'S')
		for _, e := range v {
			b = append(strconv.AppendInt(append(b, ','), int64(len(e)), 10), ':')
			b = append(b, e...)
		}
		return b
	case []bool:
		b = append(b, 'B')
		for _, e := range v {
			b = strconv.AppendBool(append(b, ','), e)
		}
		return b
	case []int:
		b = append(b, 'N')
		for _, e := range v {
			b = strconv.AppendInt(append(b, ','), int64(e), 10)
		}
		return b
	}
	return fmt.Appendf(b, "%T:%v", a, a)
}
