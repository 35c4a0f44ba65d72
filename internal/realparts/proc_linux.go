package realparts

import "syscall"

// procAttr makes the kernel send deathSig to the child when the starting
// thread's process dies (prctl PR_SET_PDEATHSIG, Linux).
func procAttr(deathSig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: deathSig}
}
