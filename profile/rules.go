package profile

// Held reports whether a lease or an outbox claim is still held at now: it carries a token
// (token 0 is no lease) and its end time until has not passed. At until == now it has run out,
// unless the profile keeps it live then (lease_at_until "live"). The reference model and every
// harness that judges a lease (replay's situations, the property invariants and generators) ask
// this one method; the naive model keeps its own copy on purpose, to cross-check it.
func (p Profile) Held(token int, until, now int64) bool {
	if token == 0 {
		return false
	}
	if p.LeaseLiveAtUntil {
		return now <= until
	}
	return now < until
}
