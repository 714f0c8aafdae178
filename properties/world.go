package properties

import (
	"maps"
	"slices"

	"github.com/pconform/pconform/models"
	"github.com/pconform/pconform/traces"
)

// world is the oracle state of a property run: the reference model after the commands so far,
// plus what the generator and the token references need to know about it. A world is never
// changed once built; apply returns a new one (gopter keeps and re-steps old states while it
// generates and shrinks).
//
// Tokens are named by serials: a command that issues a token (lease, leased consumer_fetch,
// outbox_claim) stands for that token by its own serial, on the model side and on the system
// under test alike, so a command naming a token keeps meaning the same token when shrinking drops
// other commands. A serial whose command issued nothing (or was dropped) names a token that
// matches nothing, as a forged one would.
type world struct {
	set *setup
	m   models.State
	// next is the serial the next generated command gets; it is above every serial so far.
	next int
	// issued maps the serial of a command that issued a token to that token. Shared between
	// worlds; copied before a change.
	issued map[int]issue
	// serialOf maps a model token to the serial of the command that issued it.
	serialOf map[int]int
	// held mirrors the model's in-flight deliveries: worker -> what its fetch returned.
	held map[int]heldFetch
	// batches mirrors the model's fetched batches: worker -> what its consumer_fetch_batch
	// returned, in batch order.
	batches map[int]heldBatch
	// served records how each mailbox is consumed: by leased workers, or by exactly one leaseless
	// worker (the single-worker rule of the leaseless path).
	served map[string]server
	// last is the model's result of the command that made this world, tokens as serials.
	last traces.Result
	// readBack is set when the command that made this world changed what the redrive history
	// shows or may have lost it (a redrive that moved something, a purge while there is a
	// history): the generator's next command reads the history back, of readBackID (every id
	// when "").
	readBack   bool
	readBackID string
}

// issue is a token the model issued.
type issue struct {
	claim bool     // an outbox claim token (else a lease token)
	token int      // the model's token
	ids   []string // the message (lease) or the rows (claim) it was issued for
}

// heldFetch is a worker's fetch that no handle has answered yet.
type heldFetch struct {
	mailbox, profile, id string
	// token is the model's lease token of a leased fetch (0 on the leaseless path); attempts the
	// count the fetch saw.
	token, attempts int
	// takeover: the fetch starts a takeover chain (see cmd.takeover).
	takeover bool
}

// heldBatch is a worker's batch fetch that no consumer_handle_batch has answered yet.
type heldBatch struct {
	mailbox, profile string
	// ids are the batch's messages and tokens their model lease tokens (0 on the leaseless path).
	ids    []string
	tokens []int
}

// server is how a mailbox is consumed: leaseless by worker, or leased (worker 0).
type server struct {
	leaseless bool
	worker    int
}

func newWorld(set *setup) *world {
	return &world{
		set: set, m: models.Init(models.Config{}), next: 1,
		issued: map[int]issue{}, serialOf: map[int]int{}, held: map[int]heldFetch{}, batches: map[int]heldBatch{},
		served: map[string]server{},
	}
}

// modelToken is the model token a reference names: the token its serial issued, else 0, which
// the model never matches.
func (w *world) modelToken(serial int) int {
	if is, ok := w.issued[serial]; ok {
		return is.token
	}
	return 0
}

// symbol maps a model token to its serial; a token no command issued (never expected) maps to a
// negative number so a comparison shows it.
func (w *world) symbol(tok int) int {
	if tok == 0 {
		return 0
	}
	if s, ok := w.serialOf[tok]; ok {
		return s
	}
	return -tok
}

// legal reports why c cannot follow w, or "" when it can: the model must accept it, times never go
// back, and the consumer rules hold (a handle pairs with its worker's fetch; a mailbox is served
// either by leased workers or by one leaseless worker).
func (w *world) legal(c *cmd) string {
	if c.at < w.m.Now() {
		return "time goes back"
	}
	for _, k := range w.set.avoid {
		if k.matches(w, c) {
			return "a step of known issue " + k.Name
		}
	}
	switch c.op {
	case traces.OpConsumerFetch, traces.OpConsumerFetchBatch:
		if _, busy := w.held[c.args.Worker]; busy {
			return "worker still holds a fetch"
		}
		if _, busy := w.batches[c.args.Worker]; busy {
			return "worker still holds a batch"
		}
		srv, ok := w.served[c.args.Mailbox]
		leaseless := c.args.Profile == traces.ProfileLeaseless
		if ok && (srv.leaseless != leaseless || leaseless && srv.worker != c.args.Worker) {
			return "mailbox served otherwise"
		}
	case traces.OpConsumerHandle:
		if h, ok := w.held[c.args.Worker]; ok && (h.mailbox != c.args.Mailbox || h.profile != c.args.Profile) {
			return "handle does not pair with the worker's fetch"
		}
	case traces.OpConsumerHandleBatch:
		b, ok := w.batches[c.args.Worker]
		if !ok {
			return "the worker holds no batch"
		}
		if b.mailbox != c.args.Mailbox || b.profile != c.args.Profile || len(b.ids) != len(c.args.Outcomes) {
			return "handle does not pair with the worker's batch"
		}
		if c.args.Fault == traces.FaultCommitFails && !w.fenced(b) {
			// The store target fails a batch's commit through its last message's Effects, which
			// a message whose fence fails never runs.
			return "a failed commit of a batch some message of which lost its fence"
		}
	}
	if _, err := w.apply(c); err != nil {
		return err.Error()
	}
	return ""
}

// apply runs c on the model and returns the next world. The error wraps models.ErrMalformed when
// the model refuses the step.
func (w *world) apply(c *cmd) (*world, error) {
	a := c.args
	a.Token = w.modelToken(c.tok)
	m, r, err := models.Step(w.m, c.op, c.at, a)
	if err != nil {
		return nil, err
	}
	n := *w
	n.m = m
	n.next = max(w.next, c.serial+1)
	// A token the model issued now is named by c's serial from here on.
	newToken := func(tok int, claim bool, ids []string) {
		if tok == 0 {
			return
		}
		n.issued = maps.Clone(n.issued)
		n.issued[c.serial] = issue{claim: claim, token: tok, ids: ids}
		n.serialOf = maps.Clone(n.serialOf)
		n.serialOf[tok] = c.serial
	}
	switch c.op {
	case traces.OpLease:
		if r.Message != nil {
			newToken(r.Message.Token, false, []string{r.Message.ID})
		}
	case traces.OpOutboxClaim:
		if len(r.Claimed) > 0 {
			ids := make([]string, len(r.Claimed))
			for i, cl := range r.Claimed {
				ids[i] = cl.ID
			}
			newToken(r.Claimed[0].Token, true, ids)
		}
	case traces.OpConsumerFetch:
		n.serve(c)
		if r.Message != nil {
			if c.args.Profile == traces.ProfileLeased {
				newToken(r.Message.Token, false, []string{r.Message.ID})
			}
			n.held = maps.Clone(n.held)
			n.held[c.args.Worker] = heldFetch{mailbox: c.args.Mailbox, profile: c.args.Profile, id: r.Message.ID,
				token: r.Message.Token, attempts: r.Message.Attempts, takeover: c.takeover}
		}
	case traces.OpConsumerHandle:
		if _, ok := n.held[c.args.Worker]; ok {
			n.held = maps.Clone(n.held)
			delete(n.held, c.args.Worker)
		}
	case traces.OpConsumerFetchBatch:
		n.serve(c)
		// The batch's k-th lease token is named by serial c.serial+k: the generator reserved
		// the serials up to c.serial+size (next, below).
		n.next = max(n.next, c.serial+max(c.args.Size, 1))
		if len(r.Messages) > 0 {
			b := heldBatch{mailbox: c.args.Mailbox, profile: c.args.Profile}
			for k, m := range r.Messages {
				b.ids = append(b.ids, m.ID)
				b.tokens = append(b.tokens, m.Token)
				if m.Token != 0 {
					n.issued = maps.Clone(n.issued)
					n.issued[c.serial+k] = issue{token: m.Token, ids: []string{m.ID}}
					n.serialOf = maps.Clone(n.serialOf)
					n.serialOf[m.Token] = c.serial + k
				}
			}
			n.batches = maps.Clone(n.batches)
			n.batches[c.args.Worker] = b
		}
	case traces.OpConsumerHandleBatch:
		if _, ok := n.batches[c.args.Worker]; ok {
			n.batches = maps.Clone(n.batches)
			delete(n.batches, c.args.Worker)
		}
	case traces.OpCrash:
		n.held = map[int]heldFetch{}
		n.batches = map[int]heldBatch{}
	}
	n.readBack, n.readBackID = false, ""
	switch {
	case c.op == traces.OpRedrive && r.Err == "":
		n.readBack, n.readBackID = true, c.args.ID
	case c.op == traces.OpPurge && len(m.Redrives()) > 0:
		n.readBack = true
	}
	n.last = n.symbolic(r)
	return &n, nil
}

// fenced reports whether every message of batch b would pass its acknowledgement's fence now:
// ready in its mailbox and, on the leased path, still under the batch's lease.
// serve records, at a mailbox's first fetch (single or batch), how it is consumed: by leased
// workers, or by the one leaseless worker that fetched.
func (w *world) serve(c *cmd) {
	if _, ok := w.served[c.args.Mailbox]; ok {
		return
	}
	w.served = maps.Clone(w.served)
	srv := server{}
	if c.args.Profile == traces.ProfileLeaseless {
		srv = server{leaseless: true, worker: c.args.Worker}
	}
	w.served[c.args.Mailbox] = srv
}

func (w *world) fenced(b heldBatch) bool {
	rows := map[string]traces.MessageRow{}
	for _, m := range w.m.Snapshot().Messages {
		rows[m.ID] = m
	}
	for k, id := range b.ids {
		m, ok := rows[id]
		if !ok || m.State != traces.StateReady || b.tokens[k] != 0 && m.Token != b.tokens[k] {
			return false
		}
	}
	return true
}

// symbolic rewrites a model result's tokens as serials.
func (w *world) symbolic(r traces.Result) traces.Result {
	if r.Message != nil {
		m := *r.Message
		m.Token = w.symbol(m.Token)
		r.Message = &m
	}
	if r.Claimed != nil {
		cl := slices.Clone(r.Claimed)
		for i := range cl {
			cl[i].Token = w.symbol(cl[i].Token)
		}
		r.Claimed = cl
	}
	if r.Messages != nil {
		ms := slices.Clone(r.Messages)
		for i := range ms {
			ms[i].Token = w.symbol(ms[i].Token)
		}
		r.Messages = ms
	}
	return r
}

// snapshot is the model's state with tokens as serials, canonical.
func (w *world) snapshot() traces.Snapshot {
	s := w.m.Snapshot()
	for i := range s.Messages {
		s.Messages[i].Token = w.symbol(s.Messages[i].Token)
	}
	for i := range s.Outbox {
		s.Outbox[i].Token = w.symbol(s.Outbox[i].Token)
	}
	traces.Canonicalize(&s)
	return s
}
