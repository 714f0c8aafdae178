package models

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pconform/pconform/traces"
)

// DescribeOp renders op with the arguments [traces.Spec] lists for it, required ones first, in
// the form op(name=value, ...). Optional arguments at their zero value are left out. An op missing
// from Spec is rendered with no arguments.
func DescribeOp(op traces.Op, a traces.Args) string {
	spec := traces.Spec[op]
	var parts []string
	for _, name := range spec.Args {
		parts = append(parts, name+"="+argValue(name, a))
	}
	for _, name := range spec.OptionalArgs {
		if v := argValue(name, a); v != "0" && v != `""` {
			parts = append(parts, name+"="+v)
		}
	}
	return string(op) + "(" + strings.Join(parts, ", ") + ")"
}

// argValue renders the argument called name (its JSON name) in a.
func argValue(name string, a traces.Args) string {
	str := strconv.Quote
	num := func(v int64) string { return strconv.FormatInt(v, 10) }
	switch name {
	case "mailbox":
		return str(a.Mailbox)
	case "id":
		return str(a.ID)
	case "key":
		return str(a.Key)
	case "priority":
		return num(int64(a.Priority))
	case "max_attempts":
		return num(int64(a.MaxAttempts))
	case "delay":
		return num(a.Delay)
	case "payload":
		return str(a.Payload)
	case "max_delivery_attempts":
		return num(int64(a.MaxDeliveryAttempts))
	case "lease_for":
		return num(a.LeaseFor)
	case "token":
		return num(int64(a.Token))
	case "reason":
		return str(a.Reason)
	case "target":
		return str(a.Target)
	case "limit":
		return num(int64(a.Limit))
	case "claim_for":
		return num(a.ClaimFor)
	case "worker":
		return num(int64(a.Worker))
	case "publisher":
		return num(int64(a.Publisher))
	case "profile":
		return str(a.Profile)
	case "outcome":
		return str(a.Outcome)
	case "retry_delay":
		return num(a.RetryDelay)
	case "fault":
		return str(a.Fault)
	case "older_than":
		return num(a.OlderThan)
	case "horizon":
		return num(a.Horizon)
	case "consumer":
		return str(a.Consumer)
	case "ttl":
		return num(a.TTL)
	case "actor":
		return str(a.Actor)
	case "expect_version":
		return num(int64(a.ExpectVersion))
	case "size":
		return num(int64(a.Size))
	case "outcomes":
		return strList(a.Outcomes)
	case "ids":
		return strList(a.IDs)
	case "reasons":
		if len(a.Reasons) == 0 {
			return `""` // absent: left out like any optional argument at its zero value
		}
		return strList(a.Reasons)
	}
	return "?"
}

// strList renders a list of strings as [a, b, ...], each quoted.
func strList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// DescribeState renders s for a person: the time and counters, then each mailbox's messages in
// seq order, the dead letters, the outbox rows and the effects (by id), the in-flight deliveries
// (by worker). Equal states render identically.
func DescribeState(s State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "time %d, last token %d, last seq %d\n", s.now, s.lastToken, s.lastSeq)
	// Every row, acked ones included, by mailbox and then seq (the mailbox's order holds only the
	// ready ones).
	rows := slices.SortedFunc(maps.Values(s.messages), func(a, b message) int {
		return cmp.Or(cmp.Compare(a.mailbox, b.mailbox), cmp.Compare(a.seq, b.seq))
	})
	for i, m := range rows {
		if i == 0 || rows[i-1].mailbox != m.mailbox {
			fmt.Fprintf(&b, "mailbox %q:\n", m.mailbox)
		}
		state := traces.StateReady
		if m.acked {
			state = traces.StateAcked
		}
		fmt.Fprintf(&b, "  #%d %q %s attempts %d/%d available_at %d", m.seq, m.id, state, m.attempts, m.maxAttempts, m.availableAt)
		if m.key != "" {
			fmt.Fprintf(&b, " key %q", m.key)
		}
		if m.priority != 0 {
			fmt.Fprintf(&b, " priority %d", m.priority)
		}
		if m.token != 0 {
			fmt.Fprintf(&b, " token %d until %d", m.token, m.leaseUntil)
		}
		if m.payload != "" {
			fmt.Fprintf(&b, " payload %q", m.payload)
		}
		b.WriteString("\n")
	}
	if len(s.dead) > 0 {
		b.WriteString("dead letters:\n")
		for _, id := range slices.Sorted(maps.Keys(s.dead)) {
			d := s.dead[id]
			fmt.Fprintf(&b, "  %q from %q attempts %d reason %q\n", d.id, d.mailbox, d.attempts, d.reason)
		}
	}
	if len(s.outbox) > 0 {
		b.WriteString("outbox:\n")
		rows := slices.SortedFunc(maps.Values(s.outbox), func(a, b outboxRow) int { return cmp.Compare(a.seq, b.seq) })
		for _, o := range rows {
			fmt.Fprintf(&b, "  #%d %q -> %q %s delivery_attempts %d/%d available_at %d", o.seq, o.id, o.target, o.state(),
				o.deliveryAttempts, o.maxDeliveryAttempts, o.availableAt)
			if o.deadReason != "" {
				fmt.Fprintf(&b, " reason %q", o.deadReason)
			}
			if o.token != 0 {
				fmt.Fprintf(&b, " token %d until %d", o.token, o.claimUntil)
			}
			b.WriteString("\n")
		}
	}
	for _, mailbox := range slices.Sorted(maps.Keys(s.effects)) {
		fmt.Fprintf(&b, "effects %q: %q\n", mailbox, s.effects[mailbox])
	}
	keys := slices.SortedFunc(maps.Keys(s.processed), func(a, b processedKey) int {
		return cmp.Or(cmp.Compare(a.consumer, b.consumer), cmp.Compare(a.id, b.id))
	})
	for _, k := range keys {
		fmt.Fprintf(&b, "processed %q by %q until %d\n", k.id, k.consumer, s.processed[k])
	}
	for _, actor := range slices.Sorted(maps.Keys(s.checkpoints)) {
		cp := s.checkpoints[actor]
		fmt.Fprintf(&b, "checkpoint %q version %d payload %q\n", actor, cp.version, cp.payload)
	}
	for _, r := range s.redrives {
		fmt.Fprintf(&b, "redriven %s %q of %q at %d (attempts %d, dead-lettered for %q) for %q\n",
			r.Kind, r.ID, r.Mailbox, r.At, r.Attempts, r.DeadReason, r.Reason)
	}
	for _, w := range slices.Sorted(maps.Keys(s.inflight)) {
		d := s.inflight[w]
		fmt.Fprintf(&b, "worker %d holds %q from %q (%s, attempts %d", w, d.id, d.mailbox, profileOf(d.leaseless), d.attempts)
		if d.token != 0 {
			fmt.Fprintf(&b, ", token %d", d.token)
		}
		b.WriteString(")\n")
	}
	for _, w := range slices.Sorted(maps.Keys(s.stops)) {
		fmt.Fprintf(&b, "worker %d %s\n", w, map[stopMark]string{stopped: "stopped", stoppedStepped: "stopped, its step under way taken", drained: "drained"}[s.stops[w]])
	}
	for w, mailbox := range s.wakes.all() {
		fmt.Fprintf(&b, "worker %d woken for %q, not fetched since\n", w, mailbox)
	}
	return b.String()
}
