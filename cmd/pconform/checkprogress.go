package main

import (
	"fmt"
	"io"
	"time"

	"github.com/pconform/pconform/observe"
)

// checkProgress shows how a log check goes: on a terminal a line rewritten in place (events/s,
// position, percent and ETA when the log's size is known); otherwise a plain line every period.
type checkProgress struct {
	w      io.Writer
	name   string
	size   int64
	dec    *observe.Decoder
	tty    bool
	period time.Duration
	start  time.Time
	last   time.Time
	shown  bool
}

func newCheckProgress(w io.Writer, name string, size int64, dec *observe.Decoder, period time.Duration) *checkProgress {
	now := time.Now()
	return &checkProgress{w: w, name: name, size: size, dec: dec, tty: isTerminal(w), period: period, start: now, last: now}
}

// update is CheckOptions.Progress.
func (p *checkProgress) update(sum observe.Summary) {
	now := time.Now()
	every := p.period
	if p.tty {
		every = 200 * time.Millisecond
	}
	if every <= 0 || now.Sub(p.last) < every {
		return
	}
	p.last = now
	took := now.Sub(p.start).Seconds()
	line := fmt.Sprintf("%s: %d events, line %d, %.0f events/s, %d live rows", p.name, sum.Events, p.dec.Line(), float64(sum.Events)/took, sum.LiveRows)
	if p.size > 0 && p.dec.Bytes > 0 {
		frac := float64(p.dec.Bytes) / float64(p.size)
		eta := time.Duration(took * (1 - frac) / frac * float64(time.Second))
		line += fmt.Sprintf(", %.0f%%, ETA %s", 100*frac, eta.Round(time.Second))
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.shown = true
		return
	}
	fmt.Fprintf(p.w, "pconform: %s\n", line)
}

// say prints a line of its own, below the live line.
func (p *checkProgress) say(msg string) {
	p.done()
	fmt.Fprintf(p.w, "pconform: %s\n", msg)
}

// done ends the live line.
func (p *checkProgress) done() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
