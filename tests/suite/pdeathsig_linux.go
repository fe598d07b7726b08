package suite

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel send SIGTERM to the process when the test
// binary that started it dies: a test that panics (or is killed by its
// timeout) skips every deferred Stop, and its ten processes would otherwise
// keep their ports and database connections for good.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
