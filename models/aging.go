package models

// aging indexes the rows and ids that leave the state at a time: the purge candidates (acked
// messages, dead letters and final outbox rows, by the time they became final), the retired and
// the purged outbox ids (by the end of their dedup horizon) and the processed-message records
// (by their expiry). A purge, and Machine.Forget, take the oldest entries from the front, so each
// costs time in the entries it touches (times log n), not in the rows the state holds.
//
// It is derived from the rows, like readyIndex, and Equal does not compare it. Entries are never
// removed when their row changes: each is checked against the row when it reaches the front, and
// dropped there if the row no longer is what the entry recorded (a dead letter redriven, an id
// retired again with a later horizon, a record marked again). So every row the index should hold
// has an entry with its current time, and a stale one costs one pop.
type aging struct {
	acked, dead, final heapOf[agedEntry]
	retired, purged    heapOf[agedEntry]
	// lateWakes orders purgedMessages by the end of their late-wake window.
	lateWakes heapOf[agedEntry]
	processed heapOf[processedEntry]
}

// agedEntry is a row or id as it entered an index: its id and the time that orders it.
type agedEntry struct {
	id string
	at int64
}

// processedEntry is a processed-message record as it was written: its key and expiry.
type processedEntry struct {
	key processedKey
	at  int64
}

// agedFirst orders entries by time, then by id: the order purge takes rows in.
func agedFirst(a, b agedEntry) bool { return a.at < b.at || a.at == b.at && a.id < b.id }

func processedFirst(a, b processedEntry) bool { return a.at < b.at }

func (a aging) clone() aging {
	return aging{acked: a.acked.clone(), dead: a.dead.clone(), final: a.final.clone(),
		retired: a.retired.clone(), purged: a.purged.clone(), lateWakes: a.lateWakes.clone(),
		processed: a.processed.clone()}
}

// takeAged pops from h, oldest first, up to limit entries (limit < 0: no limit) whose time is at
// most upTo and which valid confirms, and calls take with each. Entries valid refuses are dropped
// on the way and not counted. It returns how many it took.
func takeAged(h *heapOf[agedEntry], upTo int64, limit int, valid func(agedEntry) bool, take func(agedEntry)) int {
	n := 0
	for h.len() > 0 && n != limit && h.top().at <= upTo {
		e := h.pop(agedFirst)
		if !valid(e) {
			continue
		}
		take(e)
		n++
	}
	return n
}
