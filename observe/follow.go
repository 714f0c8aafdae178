package observe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// ErrLogRestarted is returned by a Follower whose file was truncated or rotated and starts again
// at seq 1: a new history, which a new check reads from the start.
var ErrLogRestarted = errors.New("observe: the followed log starts again at seq 1")

// ErrIdle is returned by a Follower whose log has not grown for its StopAfterIdle.
var ErrIdle = errors.New("observe: the followed log stopped growing")

// Follower reads a growing event log in commit order, as tail -F does: at the end of the data it
// waits for more; when the file is truncated or replaced (rotated) it says so and reads the new
// file from its start. A new file that goes on with the next sequence number continues the same
// history; one that starts again at seq 1 ends it with ErrLogRestarted.
type Follower struct {
	// Path is the log's file name.
	Path string
	// Poll is how often a quiet log is looked at again; 0 means 50ms.
	Poll time.Duration
	// Quiet is how long a log may stay quiet before the events held back for ordering are
	// checked without waiting for a window of later ones; 0 means 200ms.
	Quiet time.Duration
	// StopAfterIdle ends the log (ErrIdle) once it has not grown for that long; 0 never.
	StopAfterIdle time.Duration
	// Say receives what happens to the file (truncated, rotated); nil drops it.
	Say func(string)
	// Window is the reorder window (<= 0: DefaultWindow).
	Window int

	f     *os.File
	fi    os.FileInfo
	dec   *Decoder
	ord   *Ordered
	ready []Event
	// restart is set when the old history has ended (its held events go out first);
	// restarted once ErrLogRestarted was returned, for the next call to begin the new one.
	restart, restarted bool
	first              Event // the first event of a restarted log
	// fresh is set from a truncation or rotation until the new file's first event is read.
	fresh bool
	_     struct{}
}

// Decoder is the decoder reading the current file (for progress); nil before the first Next.
func (fl *Follower) Decoder() *Decoder { return fl.dec }

// Close closes the file.
func (fl *Follower) Close() error {
	if fl.f == nil {
		return nil
	}
	return fl.f.Close()
}

// Next returns the next event in commit order, waiting for it; it returns ctx's error once ctx is
// done, ErrIdle, ErrLogRestarted, or an error of the log (ErrBadLog). The event stays valid
// until the next call.
func (fl *Follower) Next(ctx context.Context) (*Event, error) {
	if fl.f == nil {
		if err := fl.open(); err != nil {
			return nil, err
		}
	}
	if fl.restarted {
		fl.restarted = false
		fl.ord.Restart()
		if err := fl.ord.pushEvent(&fl.first); err != nil {
			return nil, err
		}
	}
	poll, quiet := fl.Poll, fl.Quiet
	if poll <= 0 {
		poll = 50 * time.Millisecond
	}
	if quiet <= 0 {
		quiet = 200 * time.Millisecond
	}
	grew := time.Now()
	drained := false
	for {
		if len(fl.ready) > 0 {
			ev := &fl.ready[0]
			fl.ready = fl.ready[1:]
			return ev, nil
		}
		if fl.restart {
			fl.restart, fl.restarted = false, true
			return nil, ErrLogRestarted
		}
		if fl.fresh {
			// The new file's first event decides whether it goes on with the history.
			seen, over, err := fl.startsOver()
			if err != nil {
				return nil, err
			}
			if seen {
				fl.fresh = false
				if over {
					// The old history ends here: what was held back for ordering is checked
					// first.
					out, err := fl.ord.finish()
					if err != nil {
						return nil, err
					}
					fl.ready, fl.restart = out, true
					continue
				}
				grew = time.Now()
			} else {
				// Nothing in the new file yet: wait, reading none of it past the decision.
				if fl.StopAfterIdle > 0 && time.Since(grew) >= fl.StopAfterIdle {
					return nil, ErrIdle
				}
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(poll):
				}
				continue
			}
		}
		ev, err := fl.ord.Next()
		if err == nil {
			return ev, nil
		}
		if !errors.Is(err, io.EOF) {
			return nil, err
		}
		fl.ord.Resume()
		if moved, err := fl.moved(); err != nil {
			return nil, err
		} else if moved {
			fl.fresh = true
		}
		if !drained && time.Since(grew) >= quiet {
			out, err := fl.ord.Drain()
			if err != nil {
				return nil, err
			}
			fl.ready, drained = out, true
			continue
		}
		if fl.StopAfterIdle > 0 && time.Since(grew) >= fl.StopAfterIdle {
			return nil, ErrIdle
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
		if fi, err := fl.f.Stat(); err == nil && fi.Size() > fl.dec.Bytes {
			grew, drained = time.Now(), false
		}
	}
}

func (fl *Follower) open() error {
	f, err := os.Open(fl.Path)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	fl.f, fl.fi = f, fi
	fl.dec = NewDecoder(f, fl.Path)
	fl.dec.Follow = true
	fl.ord = NewOrdered(fl.dec, fl.Window)
	fl.ord.Follow = true
	return nil
}

// moved looks for a truncated or replaced file and, finding one, reads the new content from its
// start.
func (fl *Follower) moved() (bool, error) {
	fi, err := os.Stat(fl.Path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil // rotated away, the new file not there yet
		}
		return false, err
	}
	switch {
	case !os.SameFile(fi, fl.fi):
		f, err := os.Open(fl.Path)
		if err != nil {
			return false, err
		}
		fl.f.Close()
		fl.f, fl.fi = f, fi
		fl.say(fmt.Sprintf("%s was replaced (rotated); reading the new file from its start", fl.Path))
		fl.dec.Reset(f)
		return true, nil
	case fi.Size() < fl.dec.Bytes:
		if _, err := fl.f.Seek(0, io.SeekStart); err != nil {
			return false, err
		}
		fl.fi = fi
		fl.say(fmt.Sprintf("%s was truncated (%d bytes, %d read); reading it again from its start", fl.Path, fi.Size(), fl.dec.Bytes))
		fl.dec.Reset(fl.f)
		return true, nil
	}
	return false, nil
}

// startsOver peeks at the new file's first event: a write at seq 1 begins a new history (kept
// for the check that reads it). Otherwise the event joins the ordering as the history goes on.
func (fl *Follower) startsOver() (seen, over bool, err error) {
	ev, err := fl.dec.Next()
	if errors.Is(err, io.EOF) {
		return false, false, nil // nothing in it yet
	}
	if err != nil {
		return false, false, err
	}
	if !ev.Read && ev.Seq == 1 && fl.ord.holdsFirstWrite() {
		fl.first = *ev
		return true, true, nil
	}
	return true, false, fl.ord.pushEvent(ev)
}

func (fl *Follower) say(s string) {
	if fl.Say != nil {
		fl.Say(s)
	}
}
