package suite

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestFreeAddrIsClaimed: a port FreeAddr handed out is held against every
// other test process (an flock another open file cannot take) and not
// handed out again.
func TestFreeAddrIsClaimed(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(addr, ":")
	f, err := os.Open(filepath.Join(os.TempDir(), "coworkjobs-ports", port))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		t.Fatalf("port %s: another open file took its claim", port)
	}
	n, _ := strconv.Atoi(port)
	if claimPort(n) {
		t.Fatalf("port %s claimed twice", port)
	}
}
