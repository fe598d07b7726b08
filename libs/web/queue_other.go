//go:build !linux

package web

// acceptQueueLen is unknown off Linux (-1): a full server always rotates.
func acceptQueueLen(uintptr) int { return -1 }
