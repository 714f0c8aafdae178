// Package unfencedack defines an Analyzer that reports unfenced acknowledgements of a message
// that holds a lease.
//
// # Analyzer unfencedack
//
// unfencedack: report AckByID/NackByID on a leased message
//
// Ack and Nack take the lease token: a worker whose lease expired and was re-leased by another
// worker gets ErrLeaseLost instead of acknowledging someone else's delivery. AckByID and
// NackByID take no token; they exist for the leaseless path, where exactly one worker serves a
// mailbox. Calling them for a message that was leased defeats the fence: a stale worker can ack
// (or count an attempt of) a delivery another worker is still processing.
//
// The analyzer looks, within one function and its closures, for a call to a method named
// AckByID or NackByID whose id argument is the ID of a message that holds a lease token: a
// value that came from a method named Lease returning *actordelivery.Message, or whose Token
// field (actordelivery.Message.Token) is read in that function, or a message inside an
// actordelivery.Delivery (which may come from either path; it carries its Path so the
// acknowledgement can match it). The message is found through selector chains and plain local
// copies (m := d.Message; id := m.ID).
//
// Such a call is accepted when it can only run on the leaseless path:
//   - inside the branch of an if or switch case whose condition implies the leaseless path:
//     p == PathLeaseless, p != PathLeased, m.Token == "" (also as one operand of &&, or negated
//     from the leased test), or in the else branch of a condition implying the leased path,
//     or in a tag switch on a Path in the PathLeaseless case;
//   - after an early exit: a preceding if without else whose condition implies the leased path
//     and whose branch ends in return or panic;
//   - inside a function marked //pconform:singleworker;
//   - inside a method of actordelivery.Store (the store implements one operation with another).
//
// Ids that do not come from a message value (literals, trace arguments, ids passed in as
// strings) are not examined: tests and replay call the unfenced operations on purpose. A finding
// made on purpose is silenced with //pconform:ignore unfencedack <reason>.
package unfencedack
