package tests

import (
	"strconv"
	"time"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func nowRFC3339() string { return time.Now().UTC().Format(time.RFC3339) }
