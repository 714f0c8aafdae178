package bridge

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/pconform/pconform/traces"
)

// stateFieldNames are the accepted spellings of a snapshot row's `state`. `state` is a keyword of
// the P language, so a named-tuple field cannot be called that; the models spell it `row_state`,
// and the bridge maps it back to the trace's `state`.
var stateFieldNames = []string{"state", "row_state"}

// decodeFinal reads an eObsFinal payload into a canonical snapshot.
func decodeFinal(payload json.RawMessage) (*traces.Snapshot, error) {
	obj, err := decodeObject(payload, "")
	if err != nil {
		return nil, err
	}
	snap := &traces.Snapshot{
		Messages:    []traces.MessageRow{},
		Outbox:      []traces.OutboxRow{},
		DeadLetters: []traces.DeadLetterRow{},
		Effects:     map[string][]string{},
	}
	items, err := obj.array("messages")
	if err != nil {
		return nil, err
	}
	for i, item := range items {
		row, err := decodeMessageRow(item, fmt.Sprintf("messages[%d]", i))
		if err != nil {
			return nil, err
		}
		snap.Messages = append(snap.Messages, row)
	}
	if items, err = obj.array("outbox"); err != nil {
		return nil, err
	}
	for i, item := range items {
		row, err := decodeOutboxRow(item, fmt.Sprintf("outbox[%d]", i))
		if err != nil {
			return nil, err
		}
		snap.Outbox = append(snap.Outbox, row)
	}
	if items, err = obj.array("dead_letters"); err != nil {
		return nil, err
	}
	for i, item := range items {
		row, err := decodeDeadLetterRow(item, fmt.Sprintf("dead_letters[%d]", i))
		if err != nil {
			return nil, err
		}
		snap.DeadLetters = append(snap.DeadLetters, row)
	}
	effects, err := obj.objectField("effects")
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(effects.fields))
	for k := range effects.fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		mailbox := unquoteMapKey(k)
		if mailbox == "" {
			return nil, effects.errorf(k, "empty mailbox name")
		}
		if _, dup := snap.Effects[mailbox]; dup {
			return nil, effects.errorf(k, "mailbox %q given twice", mailbox)
		}
		ids, err := effects.array(k)
		if err != nil {
			return nil, err
		}
		list := make([]string, 0, len(ids))
		for j, raw := range ids {
			var id string
			if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &id) != nil {
				return nil, effects.errorf(fmt.Sprintf("%s[%d]", k, j), "want a string, got %s", describeJSON(raw))
			}
			list = append(list, id)
		}
		snap.Effects[mailbox] = list
	}
	if err := obj.done(); err != nil {
		return nil, err
	}
	traces.Canonicalize(snap)
	return snap, nil
}

// unquoteMapKey undoes the checker's way of writing a map[string, ...] key: P 3.1 writes the key
// as the P value's text, so the mailbox "inbox" arrives as the key `"inbox"` with its quotes. A key
// without surrounding quotes is taken as is.
func unquoteMapKey(k string) string {
	if len(k) >= 2 && strings.HasPrefix(k, `"`) && strings.HasSuffix(k, `"`) {
		return k[1 : len(k)-1]
	}
	return k
}

func decodeMessageRow(raw json.RawMessage, path string) (traces.MessageRow, error) {
	var r traces.MessageRow
	o, err := decodeObject(raw, path)
	if err != nil {
		return r, err
	}
	ints := map[string]*int64{}
	var priority, attempts, maxAttempts, token int64
	ints["priority"], ints["attempts"], ints["max_attempts"], ints["token"] = &priority, &attempts, &maxAttempts, &token
	ints["available_at"], ints["lease_until"] = &r.AvailableAt, &r.LeaseUntil
	strs := map[string]*string{"mailbox": &r.Mailbox, "id": &r.ID, "key": &r.Key, "payload": &r.Payload}
	if err := readRow(o, strs, ints); err != nil {
		return r, err
	}
	if r.State, err = o.strAlias(stateFieldNames...); err != nil {
		return r, err
	}
	r.Priority, r.Attempts, r.MaxAttempts, r.Token = int(priority), int(attempts), int(maxAttempts), int(token)
	return r, o.done()
}

func decodeOutboxRow(raw json.RawMessage, path string) (traces.OutboxRow, error) {
	var r traces.OutboxRow
	o, err := decodeObject(raw, path)
	if err != nil {
		return r, err
	}
	var priority, maxAttempts, deliveryAttempts, token int64
	ints := map[string]*int64{
		"priority": &priority, "max_attempts": &maxAttempts, "delivery_attempts": &deliveryAttempts,
		"token": &token, "available_at": &r.AvailableAt, "claim_until": &r.ClaimUntil,
	}
	strs := map[string]*string{"id": &r.ID, "target": &r.Target, "key": &r.Key, "payload": &r.Payload, "reason": &r.Reason}
	if err := readRow(o, strs, ints); err != nil {
		return r, err
	}
	if r.State, err = o.strAlias(stateFieldNames...); err != nil {
		return r, err
	}
	r.Priority, r.MaxAttempts, r.DeliveryAttempts, r.Token = int(priority), int(maxAttempts), int(deliveryAttempts), int(token)
	return r, o.done()
}

func decodeDeadLetterRow(raw json.RawMessage, path string) (traces.DeadLetterRow, error) {
	var r traces.DeadLetterRow
	o, err := decodeObject(raw, path)
	if err != nil {
		return r, err
	}
	var priority, attempts, maxAttempts int64
	strs := map[string]*string{"mailbox": &r.Mailbox, "id": &r.ID, "key": &r.Key, "payload": &r.Payload, "reason": &r.Reason}
	ints := map[string]*int64{"priority": &priority, "attempts": &attempts, "max_attempts": &maxAttempts, "dead_at": &r.DeadAt}
	if err := readRow(o, strs, ints); err != nil {
		return r, err
	}
	r.Priority, r.Attempts, r.MaxAttempts = int(priority), int(attempts), int(maxAttempts)
	return r, o.done()
}

// readRow fills the given string and integer fields, in sorted field order so that the first
// error reported does not depend on map iteration.
func readRow(o *object, strs map[string]*string, ints map[string]*int64) error {
	names := make([]string, 0, len(strs)+len(ints))
	for n := range strs {
		names = append(names, n)
	}
	for n := range ints {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if p, ok := strs[n]; ok {
			v, err := o.str(n)
			if err != nil {
				return err
			}
			*p = v
			continue
		}
		v, err := o.int(n)
		if err != nil {
			return err
		}
		*ints[n] = v
	}
	return nil
}
