package bridge

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/pconform/pconform/observe"
)

// StreamChecker is the streaming P oracle as an observe.Checker: observe.Check hands it each
// event of a log in commit order, it derives the event's spec events (SpecStep,
// SpecDeriver) and sends them to the checker as it goes. The checker's verdict comes back
// when it stops reading (a monitor fired: the next Observe reports it) or at End. Its findings
// name the event whose spec event the monitor refused; their Oracle is "p".
//
// A log that starts from a snapshot of a database's rows (a recorder turned on mid-life) starts
// the monitors from those rows (SpecDeriver.Adopt); a finding on a snapshot row names
// its line.
//
// Call Close when the check ends, whatever the way: it stops the checker if End did not run.
// Err is the error that stopped the oracle (the checker could not run), nil when none; after
// one, the oracle reports nothing more.
type StreamChecker struct {
	s    *Stream
	d    *SpecDeriver
	evs  []SpecEvent
	pos  int
	tag  []byte
	done bool
	err  error
	// stepped is set once an event other than a snapshot's came; adopted once the starting
	// snapshot ended.
	stepped, adopted bool
	// lastSeq and lastLine are the last step's, for the events End raises (SpecDeriver.Flush).
	lastSeq  int64
	lastLine int
	// Spec counts the spec events sent; Found is the finding reported, nil when none.
	Spec  int64
	Found *observe.Finding
	// Verdict is the checker's run, once it ended (End, or a finding).
	Verdict StreamVerdict
}

// NewStreamChecker starts the streaming P oracle (StartStream) for one log.
func NewStreamChecker(ctx context.Context, cfg Config) (*StreamChecker, error) {
	s, err := StartStream(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// The deriver judges rows under the profile the monitors were compiled with.
	return &StreamChecker{s: s, d: NewSpecDeriver(cfg.Profile)}, nil
}

// Observe sends ev's spec events to the checker; it returns the checker's finding once the
// checker has stopped reading.
func (c *StreamChecker) Observe(ev *observe.Event) *observe.Finding {
	if ev.Row != nil {
		// A snapshot event (a row the database held when a recording store opened). The log's
		// starting snapshot is adopted: the monitors are told each row as if it was created
		// just before (SpecDeriver.Adopt), so its first use is judged against it. A
		// restart's snapshot restates what the monitors saw; it is no step.
		if c.stepped || c.adopted || c.done {
			return nil
		}
		if ev.Row.Table == "end" {
			c.adopted = true
			return nil
		}
		var err error
		if c.evs, err = c.d.Adopt(ev, c.evs[:0]); err != nil {
			c.err = fmt.Errorf("%w: %w", observe.ErrBadLog, err)
			_ = c.Close()
			return nil
		}
		c.send(ev, c.pos)
		if c.s.Broken() {
			return c.verdict()
		}
		return nil
	}
	c.stepped = true
	pos := c.pos
	c.pos++
	c.lastSeq, c.lastLine = ev.Seq, ev.Line
	if c.done {
		return nil
	}
	c.evs = c.d.Step(SpecStep(ev), c.evs[:0])
	if len(c.evs) == 0 {
		return nil
	}
	c.send(ev, pos)
	if c.s.Broken() {
		return c.verdict()
	}
	return nil
}

// send sends c.evs, the spec events of ev, the event at position pos, tagged with it.
func (c *StreamChecker) send(ev *observe.Event, pos int) {
	if len(c.evs) == 0 {
		return
	}
	c.tag = strconv.AppendInt(c.tag[:0], int64(pos), 10)
	c.tag = append(c.tag, ':')
	c.tag = strconv.AppendInt(c.tag, ev.Seq, 10)
	c.tag = append(c.tag, ':')
	c.tag = strconv.AppendInt(c.tag, int64(ev.Line), 10)
	tag := string(c.tag)
	for _, sev := range c.evs {
		c.s.Send(sev, tag)
	}
	c.Spec = c.s.sent
}

// End closes the checker's input and returns its finding, nil when every monitor held.
func (c *StreamChecker) End() *observe.Finding {
	if c.done {
		return nil
	}
	c.evs = c.d.Flush(c.evs[:0])
	if len(c.evs) > 0 {
		tag := fmt.Sprintf("%d:%d:%d", c.pos-1, c.lastSeq, c.lastLine)
		for _, sev := range c.evs {
			c.s.Send(sev, tag)
		}
	}
	return c.verdict()
}

// verdict waits for the checker's verdict.
func (c *StreamChecker) verdict() *observe.Finding {
	c.done = true
	v, err := c.s.Close()
	c.Spec, c.Verdict = v.Sent, v
	if err != nil {
		c.err = err
		return nil
	}
	if v.Message == "" {
		return nil
	}
	f := &observe.Finding{Oracle: "p", Step: -1, Message: v.Message}
	if parts := strings.Split(v.Tag, ":"); len(parts) == 3 {
		pos, err1 := strconv.Atoi(parts[0])
		seq, err2 := strconv.ParseInt(parts[1], 10, 64)
		line, err3 := strconv.Atoi(parts[2])
		if err1 == nil && err2 == nil && err3 == nil {
			f.Step, f.Seq, f.Line = pos, seq, line
		}
	}
	if f.Line == 0 {
		c.err = fmt.Errorf("bridge: the streaming P oracle's verdict names no event (tag %q): %s", v.Tag, v.Message)
		return nil
	}
	c.Found = f
	return f
}

// Err is the error that stopped the oracle, nil when none.
func (c *StreamChecker) Err() error { return c.err }

// Close stops the checker if its verdict is not in yet. It returns Err.
func (c *StreamChecker) Close() error {
	if !c.done {
		c.done = true
		if c.s.cmd.Process != nil {
			_ = c.s.cmd.Process.Kill()
		}
		_, _ = c.s.Close()
	}
	return c.err
}
