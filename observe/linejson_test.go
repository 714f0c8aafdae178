package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pconform/pconform/actordelivery/record"
)

// parseJSON is the reference for lineParser: the line read by encoding/json, as the decoder
// read it before it was written out by hand.
func parseJSON(raw []byte) (record.Event, lineExtra, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var l line
	if err := dec.Decode(&l); err != nil {
		return record.Event{}, lineExtra{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return record.Event{}, lineExtra{}, errors.New("trailing data")
	}
	ev := record.Event{Read: l.Read, Op: l.Op, Args: l.Args, Result: l.Result, Row: l.Row}
	x := lineExtra{msg: l.Msg}
	if l.Seq != nil {
		ev.Seq, x.hasSeq = *l.Seq, true
	}
	if l.At != nil {
		ev.At, x.hasAt = *l.At, true
	}
	return ev, x, nil
}

// lineSeeds are event lines that hold the decoder to encoding/json's corners: names matched
// case-insensitively or escaped, repeated members merging, null, strings with escapes and bad
// UTF-8, numbers that are not integers, nesting, slog records. The committed corpus in
// testdata/fuzz/FuzzEventLine holds more.
var lineSeeds = []string{
	// Snapshot rows (a recording store's opening state): every member, members repeated or
	// cased otherwise, null times and rows, times and numbers of the wrong kind.
	`{"seq":0,"read":true,"at":"2026-01-01T00:00:00Z","op":"snapshot","args":{"incarnation":"i-1"},"result":{},"row":{"table":"message","mailbox":"a","id":"m1","key":"k","priority":2,"payload":"p","state":"ready","attempts":1,"max_attempts":3,"token":"T1","until":"2026-01-01T00:00:30.5Z","available_at":"2026-01-01T00:00:00Z"}}`,
	`{"seq":0,"read":true,"at":"2026-01-01T00:00:00Z","op":"snapshot","args":{"incarnation":"i-1"},"row":{"table":"outbox","id":"o1","target":"b","max_attempts":1,"max_delivery_attempts":4,"state":"dead_letter","attempts":4,"reason":"r","final_at":"2026-01-01T00:00:00+02:00","available_at":"2026-01-01T00:00:00Z"}}`,
	`{"seq":0,"read":true,"at":"2026-01-01T00:00:00Z","op":"snapshot","args":{"incarnation":"i-1"},"row":{"table":"processed","consumer":"c","id":"m1","expires_at":"2027-01-01T00:00:00Z"},"ROW":{"Table":"checkpoint","ACTOR":"x","version":3}}`,
	`{"seq":0,"read":true,"at":"2026-01-01T00:00:00Z","op":"snapshot","row":{"table":"end","rows":12,"until":null,"final_at":null}}`,
	`{"seq":0,"read":true,"at":"2026-01-01T00:00:00Z","op":"snapshot","row":null}`,
	`{"seq":0,"read":true,"at":"2026-01-01T00:00:00Z","op":"snapshot","row":{"table":"purged_id","id":"m2","expires_at":"yesterday"}}`,
	`{"seq":0,"read":true,"at":"2026-01-01T00:00:00Z","op":"snapshot","row":{"table":"message","until":5,"version":1.5}}`,
	`{"seq":0,"read":true,"at":"2026-01-01T00:00:00Z","op":"snapshot","row":[1]}`,
	`{"seq":1,"at":"2026-01-01T00:00:00Z","op":"ack","args":{"id":"m1"},"row":{"table":"message"}}`,
	`{"seq":1,"at":"2026-01-01T00:00:00Z","op":"enqueue","args":{"mailbox":"a","id":"m1","max_attempts":2},"result":{}}`,
	`{"seq":2,"at":"2026-01-01T00:00:01Z","op":"lease","args":{"mailbox":"a","lease_for":5000000000},"result":{"message":{"id":"m1","attempts":1,"token":"T1"}}}`,
	`{"seq":3,"read":true,"at":"2026-01-01T00:00:01.5+01:00","op":"peek","args":{"mailbox":"a"},"result":{"message":null}}`,
	`{"time":"2026-01-01T00:00:00Z","level":"INFO","msg":"actordelivery: event","seq":4,"at":"2026-01-01T00:00:02Z","op":"outbox_claim","args":{"limit":2,"claim_for":1000000000},"result":{"claimed":[{"id":"o1","delivery_attempts":1,"token":"C1"},{"id":"o2","delivery_attempts":1,"token":"C1"}]}}`,
	`{"SEQ":5,"At":"2026-01-01T00:00:02Z","oP":"ack","ARGS":{"ID":"m1","ToKeN":"T1"},"result":{}}`,
	`{"s\u0065q":6,"at":"2026-01-01T00:00:02Z","op":"ack","args":{"id":"m\u00e9\ud83d\ude00\ud800x\"\\\/\b\f\n\r\t"},"result":{}}`,
	`{"seq":7,"at":"2026-01-01T00:00:02Z","op":"ack","args":{"id":"a"},"args":{"key":"k"},"result":{"message":{"id":"x","attempts":2},"message":{"token":"t"}}}`,
	`{"seq":8,"at":"2026-01-01T00:00:02Z","op":"outbox_claim","args":{"limit":1},"result":{"claimed":[{"id":"a"},{"id":"b"}],"claimed":[{"token":"t"}],"claimed":[{},{}]}}`,
	`{"seq":9,"at":"2026-01-01T00:00:02Z","op":"outbox_claim","args":{"limit":1},"result":{"claimed":[]}}`,
	`{"seq":9,"at":"2026-01-01T00:00:02Z","op":"outbox_claim","args":null,"result":{"claimed":null,"message":null,"err":null}}`,
	`{"seq":10,"at":"2026-01-01T00:00:02Z","seq":null,"op":"ack"}`,
	`{"seq":10,"at":null,"op":"ack"}`,
	`{"seq":1.0,"at":"2026-01-01T00:00:02Z","op":"ack"}`,
	`{"seq":1e3,"at":"2026-01-01T00:00:02Z","op":"ack"}`,
	`{"seq":-0,"read":true,"at":"2026-01-01T00:00:02Z","op":"peek","args":{"mailbox":"a","priority":-9223372036854775808}}`,
	`{"seq":99999999999999999999,"at":"2026-01-01T00:00:02Z","op":"ack"}`,
	`{"seq":"1","at":"2026-01-01T00:00:02Z","op":"ack"}`,
	`{"seq":1,"at":"2026-01-01 00:00:02","op":"ack"}`,
	`{"seq":1,"at":5,"op":"ack"}`,
	`{"seq":1,"at":"2026-01-01T00:00:02Z","op":"ack","time":{"a":[1,2.5e-3,true,false,null,"x"]},"level":[[[]]]}`,
	`{"seq":1,"at":"2026-01-01T00:00:02Z","op":"ack","colour":1}`,
	`{"seq":1,"at":"2026-01-01T00:00:02Z","op":"ack","args":{"colour":1}}`,
	`{"seq":1,"at":"2026-01-01T00:00:02Z","op":"ack"} `,
	`{"seq":1,"at":"2026-01-01T00:00:02Z","op":"ack"}{}`,
	`{"seq":1,"at":"2026-01-01T00:00:02Z","op":"ack",}`,
	`{"seq":1 "at":"2026-01-01T00:00:02Z"}`,
	`{"seq":1,"read":"true"}`,
	`{"seq":1,"read":nul}`,
	`{"seq":01}`,
	`{"seq":-}`,
	`{"seq":1.}`,
	"{\"op\":\"a\x01\"}",
	"{\"op\":\"\xff\xfe\"}",
	"{\"op\":\"\xed\xa0\x80\"}",
	`{"op":"\u12"}`,
	`{"op":"\x"}`,
	"\t{ \"seq\" : 1 , \"op\" : \"ack\" }\r",
	`null`,
	`[1]`,
	`"x"`,
	`12`,
	`true`,
	``,
	`{`,
	`{"seq":`,
	`{"result":{"message":5}}`,
	`{"result":{"claimed":{}}}`,
	`{"result":{"claimed":[1]}}`,
	`{"result":{"claimed":[null,{"id":"a"}]}}`,
	`{"args":"x"}`,
	`{"args":{"delay":-1,"lease_for":9223372036854775807,"ttl":1}}`,
	`{"\u0053eq":3,"ſeq":4}`,
	// The schema decoder's own paths: the integer fast path's edges, null and its misspellings
	// where an object goes, members in an odd case in every object.
	`{"seq":123456789012345678,"at":"2026-01-01T00:00:02Z","op":"ack"}`,
	`{"seq":1234567890123456789,"at":"2026-01-01T00:00:02Z","op":"ack"}`,
	`{"seq":9223372036854775808,"at":"2026-01-01T00:00:02Z","op":"ack"}`,
	"{\"seq\":5\t,\"at\":\"2026-01-01T00:00:02Z\",\"op\":\"ack\"}",
	`{"seq":5}`,
	`{"seq":5]`,
	`{"seq":00,"op":"ack"}`,
	`{"seq":0,"read":true,"op":"peek","args":{"worker":0,"limit":-1}}`,
	`{"args":nul}`,
	`{"args":nullx}`,
	`{"result":nul}`,
	`{"result":{"message":nul}}`,
	`{"result":{"message":{"id":"a"},"message":null,"message":{"token":"t"}}}`,
	`{"result":{"claimed":[nul]}}`,
	`{"result":{"claimed":[{"DELIVERY_ATTEMPTS":2,"Id":"o"}]}}`,
	`{"result":{"MESSAGE":{"ATTEMPTS":2,"TOKEN":"t"},"Err":"lease_lost","VERSION":3}}`,
	`{"args":{"Expect_Version":3,"TTL":1,"Older_Than":2,"Max_Delivery_Attempts":4}}`,
	`{"args":{"mailbox":"a","mailbox":"b","mailbox":null}}`,
	`{"args":{"worker":1.5}}`,
	`{"args":{"worker":"1"}}`,
	`{"args":{"worker":true}}`,
	`{"args":{"worker":-}}`,
	// The batch steps' lists (decoded by encoding/json): as recorded, then members repeated,
	// null, of the wrong kind, unknown or cased otherwise inside a list's element.
	`{"seq":3,"at":"2026-01-01T00:00:01Z","op":"consumer_fetch_batch","args":{"mailbox":"a","lease_for":40000000,"worker":2,"incarnation":"i-1","profile":"leased","size":8},"result":{"messages":[{"id":"m1","attempts":1,"token":"T1"},{"id":"m2","attempts":2,"token":"T2"}]}}`,
	`{"seq":4,"at":"2026-01-01T00:00:02Z","op":"consumer_handle_batch","args":{"mailbox":"a","worker":2,"incarnation":"i-1","profile":"leased","retry_delay":20000000,"fault":"none","outcomes":["ok","fail","fail_no_retry"]},"result":{"actions":["acked","retried","dead_lettered"]}}`,
	`{"seq":5,"at":"2026-01-01T00:00:02Z","op":"publisher_deliver_batch","args":{"token":"C1","publisher":1,"incarnation":"i-1","fault":"none","ids":["o1","o2"]},"result":{"actions":["delivered","dead_lettered"],"duplicates":[false,true]}}`,
	`{"result":{"messages":[{"id":"a","attempts":1}],"messages":[{"token":"t"}],"actions":null,"duplicates":[true,null]}}`,
	`{"result":{"messages":[{"ID":"a","Attempts":1,"TOKEN":"t"}],"Actions":["x"],"DUPLICATES":[]}}`,
	`{"result":{"messages":[{"id":"a","colour":1}]}}`,
	`{"result":{"messages":{"id":"a"}}}`,
	`{"result":{"messages":[1]}}`,
	`{"result":{"duplicates":[1]}}`,
	`{"args":{"size":2,"outcomes":["ok",null],"ids":["a","b"],"ids":["c"]}}`,
	`{"args":{"outcomes":"ok"}}`,
	`{"args":{"ids":[1]}}`,
	`{"args":{"size":1.5}}`,
	`{"args":{"ids":[` + strings.Repeat("[", 9995) + strings.Repeat("]", 9995) + `]}}`,
	`{"time":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}`,
	`{"time":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
}

// FuzzEventLine is the differential test of the event line decoder: on every input it accepts
// exactly what encoding/json accepts and gives the same values.
func FuzzEventLine(f *testing.F) {
	for _, s := range lineSeeds {
		f.Add([]byte(s))
	}
	p := newLineParser()
	var got record.Event
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, wantX, werr := parseJSON(raw)
		// The parser is used twice, into an event that holds the last line's values, so its
		// caches (time stamp, strings) and its clearing of the event are exercised.
		for range 2 {
			gotX, err := p.parse(raw, &got)
			if (err == nil) != (werr == nil) {
				t.Fatalf("%q: the decoder says %v, encoding/json %v", raw, err, werr)
			}
			if err == nil && (!reflect.DeepEqual(got, want) || gotX != wantX) {
				t.Fatalf("%q: the decoder gives\n%+v %+v\nencoding/json\n%+v %+v", raw, got, gotX, want, wantX)
			}
		}
	})
}

// TestLineMembersCoverTags: the decoder's member tables name exactly the json members of the
// types it decodes, so a field added to an event type is not silently refused.
func TestLineMembersCoverTags(t *testing.T) {
	names := func(typ reflect.Type) []string {
		var out []string
		for i := range typ.NumField() {
			tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			out = append(out, tag)
		}
		slices.Sort(out)
		return out
	}
	table := func(list []string) []string { slices.Sort(list); return list }
	for _, tc := range []struct {
		typ  reflect.Type
		have []string
	}{
		{reflect.TypeFor[line](), slices.Clone(lineNames.list)},
		{reflect.TypeFor[record.Args](), slices.Clone(argNames.list)},
		{reflect.TypeFor[record.Result](), slices.Clone(resultNames.list)},
		{reflect.TypeFor[record.Message](), slices.Clone(messageNames.list)},
		{reflect.TypeFor[record.Claimed](), slices.Clone(claimedNames.list)},
		{reflect.TypeFor[record.SnapshotRow](), slices.Clone(snapNames.list)},
	} {
		if want, got := names(tc.typ), table(tc.have); !slices.Equal(want, got) {
			t.Errorf("%s: the decoder reads %q, the type's json members are %q", tc.typ, got, want)
		}
	}
}

// TestEventLineAllocs: decoding a recorded event line costs few allocations (its id and token
// strings and the result's message), so a long log is not paid for in garbage collection.
func TestEventLineAllocs(t *testing.T) {
	p := newLineParser()
	raw := []byte(lineSeeds[1])
	var ev Event
	if err := p.event(raw, &ev); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		if err := p.event(raw, &ev); err != nil {
			t.Fatal(err)
		}
	})
	if n > 3 { // the message, its id, its token
		t.Fatalf("%v allocations per line, want at most 3", n)
	}
}
