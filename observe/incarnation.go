package observe

import (
	"fmt"
)

// opIncarnation is the event a recording store writes once when it is opened
// (actordelivery.Store.Incarnation): a read event whose args name the incarnation.
const opIncarnation = "incarnation"

// incarnations keeps the workers and publishers of different incarnations of a store apart.
// Each process numbers its consumers and publishers from 1, so a restarted service, or several
// processes writing one merged log, reuse the same numbers; the events name their incarnation
// beside the number. The checker's worker is the pair (incarnation, number): each pair gets a
// number of its own, the recorded number itself when no other pair holds it yet (so a log of one
// process reads as it was recorded), else the next number above every one given. Events without
// an incarnation (a log of an older recorder) keep their numbers.
//
// The zero value is ready to use.
type incarnations struct {
	// opened maps an incarnation to the line of its event.
	opened map[string]int
	// workers and publishers map a pair to its number; taken holds the numbers given, per kind.
	workers, publishers map[member]int
	taken               [2]map[int]bool
	top                 [2]int
}

// member is a worker or a publisher of an incarnation.
type member struct {
	inc string
	n   int
}

// open takes in an incarnation event; two with the same id are an error naming both lines.
func (c *incarnations) open(ev *Event) error {
	id := ev.Args.Incarnation
	if id == "" {
		return fmt.Errorf("line %d: incarnation event without an incarnation id (args.incarnation)", ev.Line)
	}
	if c.opened == nil {
		c.opened = map[string]int{}
	}
	if l, dup := c.opened[id]; dup {
		return fmt.Errorf("line %d: incarnation %s was opened already at line %d: two stores share an id, so their workers cannot be told apart", ev.Line, id, l)
	}
	c.opened[id] = ev.Line
	return nil
}

// name renumbers ev's worker and publisher by its incarnation and clears the incarnation.
func (c *incarnations) name(ev *Event) {
	a := &ev.Args
	if a.Incarnation == "" {
		if a.Worker != 0 {
			c.take(0, a.Worker)
		}
		if a.Publisher != 0 {
			c.take(1, a.Publisher)
		}
		return
	}
	if a.Worker != 0 {
		a.Worker = c.number(&c.workers, 0, member{a.Incarnation, a.Worker})
	}
	if a.Publisher != 0 {
		a.Publisher = c.number(&c.publishers, 1, member{a.Incarnation, a.Publisher})
	}
	a.Incarnation = ""
}

func (c *incarnations) number(m *map[member]int, kind int, k member) int {
	if *m == nil {
		*m = map[member]int{}
	}
	if n, ok := (*m)[k]; ok {
		return n
	}
	n := k.n
	if c.taken[kind][n] {
		n = c.top[kind] + 1
	}
	c.take(kind, n)
	(*m)[k] = n
	return n
}

func (c *incarnations) take(kind, n int) {
	if c.taken[kind] == nil {
		c.taken[kind] = map[int]bool{}
	}
	c.taken[kind][n] = true
	c.top[kind] = max(c.top[kind], n)
}

// stated checks that a snapshot row names an incarnation the log opened before it.
func (c *incarnations) stated(ev *Event) error {
	id := ev.Args.Incarnation
	if _, ok := c.opened[id]; !ok || id == "" {
		return fmt.Errorf("line %d: snapshot row of incarnation %q, which no incarnation event before it opened", ev.Line, id)
	}
	return nil
}
