package conncap

import "golang.org/x/sys/unix"

// acceptQueueLen is the number of connections waiting in the accept queue of
// the listening socket fd: Linux reports it as tcpi_unacked in TCP_INFO for a
// socket in LISTEN state. -1 when it cannot be read.
func acceptQueueLen(fd uintptr) int {
	info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return -1
	}
	return int(info.Unacked)
}
