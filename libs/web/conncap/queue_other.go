//go:build !linux

package conncap

// acceptQueueLen is unknown off Linux (-1): a full server always rotates.
func acceptQueueLen(uintptr) int { return -1 }
