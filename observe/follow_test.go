package observe_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pconform/pconform/observe"
)

// TestFollowerRestarts: a followed log that is truncated or rotated and starts again at seq 1
// ends its history (ErrLogRestarted) and the new one is read from its start, whether the old
// history's events were already checked or still held back for ordering when the file changed.
// A new file that goes on with the next seq continues the history. It runs in a synctest bubble,
// so each step of the writer happens while the follower waits on its poll.
func TestFollowerRestarts(t *testing.T) {
	enq := ev(1, false, 0, "enqueue", `{"mailbox":"a","id":"m1","max_attempts":2}`, `{}`)
	lease := ev(2, false, 1, "lease", `{"mailbox":"a","lease_for":5000000000}`, `{"message":{"id":"m1","attempts":1,"token":"T1"}}`)
	ack := ev(3, false, 2, "ack", `{"id":"m1","token":"T1"}`, `{}`)
	ack4 := ev(4, false, 3, "ack", `{"id":"m1","token":"T1"}`, `{}`)
	history := enq + lease + ack
	const poll, quiet = 50 * time.Millisecond, time.Second
	truncate := func(t *testing.T, path string) {
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
	}
	rotate := func(t *testing.T, path string) {
		if err := os.Rename(path, path+".1"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	restarted := []string{"1@1", "2@2", "3@3", "restart", "1@1", "2@2", "3@3"}
	for _, tc := range []struct {
		name string
		// checked lets the follower check the first history before the file changes.
		checked bool
		change  func(*testing.T, string)
		next    string
		want    []string
		says    string
	}{
		{"truncated while held back", false, truncate, history, restarted, "was truncated"},
		{"truncated after checked", true, truncate, history, restarted, "was truncated"},
		{"rotated while held back", false, rotate, history, restarted, "was replaced"},
		{"rotated after checked", true, rotate, history, restarted, "was replaced"},
		{"rotated, history goes on", false, rotate, ack4, []string{"1@1", "2@2", "3@3", "4@1"}, "was replaced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "live.jsonl")
				if err := os.WriteFile(path, []byte(history), 0o644); err != nil {
					t.Fatal(err)
				}
				var said []string
				fl := &observe.Follower{Path: path, Poll: poll, Quiet: quiet, Say: func(s string) { said = append(said, s) }}
				defer fl.Close()
				ctx, cancel := context.WithCancel(t.Context())
				var got []string
				var failed error
				done := make(chan struct{})
				go func() {
					defer close(done)
					for {
						ev, err := fl.Next(ctx)
						switch {
						case errors.Is(err, observe.ErrLogRestarted):
							got = append(got, "restart")
						case errors.Is(err, context.Canceled):
							return
						case err != nil:
							failed = err
							return
						default:
							got = append(got, fmt.Sprintf("%d@%d", ev.Seq, ev.Line))
						}
					}
				}()
				synctest.Wait()
				if tc.checked {
					time.Sleep(2 * quiet)
					synctest.Wait()
				}
				tc.change(t, path)
				time.Sleep(poll)
				synctest.Wait()
				f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteString(tc.next); err != nil {
					t.Fatal(err)
				}
				f.Close()
				time.Sleep(2 * quiet)
				synctest.Wait()
				cancel()
				<-done
				if failed != nil {
					t.Fatalf("follower failed after %v: %v", got, failed)
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("follower read %v, want %v", got, tc.want)
				}
				if !strings.Contains(strings.Join(said, "\n"), tc.says) {
					t.Errorf("follower said %q, want %q in it", said, tc.says)
				}
			})
		})
	}
}
