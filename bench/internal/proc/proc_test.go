package proc

import (
	"os"
	"testing"
)

// TestReadStatOfThisProcess: the parent ReadStat reads is the one the OS
// gives, and a process that does not exist is an error.
func TestReadStatOfThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	st, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.PPID != os.Getppid() {
		t.Errorf("PPID = %d, want %d", st.PPID, os.Getppid())
	}
	if _, err := ReadStat(-1); err == nil {
		t.Error("ReadStat(-1) succeeded")
	}
}
