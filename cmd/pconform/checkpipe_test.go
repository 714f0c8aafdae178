//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCheckLogOnPipe: a log on a pipe (a named pipe here, as /dev/stdin is under a shell's |)
// is checked as an event log from its first line: telling a log from a trace must not read
// what only the check can read.
func TestCheckLogOnPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "log.pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipe here: %v", err)
	}
	good := strings.Join(strings.SplitAfter(doubleAck, "\n")[:3], "")
	go func() {
		// Opening blocks until the check opens the pipe to read it.
		if err := os.WriteFile(fifo, []byte(good), 0o600); err != nil {
			t.Error(err)
		}
	}()
	var out, errOut bytes.Buffer
	exited := make(chan int, 1)
	go func() { exited <- run([]string{"check", fifo}, &out, &errOut) }()
	select {
	case code := <-exited:
		if code != exitPass || !strings.Contains(out.String(), "3 events (3 writes) checked") {
			t.Fatalf("check of a log on a pipe exited %d:\n%s%s", code, out.String(), errOut.String())
		}
	case <-time.After(30 * time.Second):
		// A check that read the pipe to tell a log from a trace waits for a second writer.
		t.Fatal("check of a log on a pipe did not end in 30 s: it waits for data already read")
	}
}
