package traces

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pconform/pconform/profile"
)

// TestProfileRoundTrips: a trace's expect.profile is written as the profile's changed choices
// and read back equal; the default profile is written as no member at all.
func TestProfileRoundTrips(t *testing.T) {
	tr, err := ReadFile(filepath.Join("testdata", "good", "dedup-and-checkpoints.json"))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain, []byte(`"profile": {`)) {
		t.Fatal("a trace under the default profile was written with a profile member")
	}
	tr.Expect.Profile = profile.Profile{Name: "p", AckDeletes: true, ReasonMaxAttempts: "spent"}
	b, err := Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	want := `"profile": {"name": "p", "ack": "deletes", "reason_max_attempts": "spent"}`
	if !bytes.Contains(b, []byte(want)) {
		t.Fatalf("encoding lacks %s:\n%s", want, b[:min(len(b), 400)])
	}
	back, err := Unmarshal(b, "x")
	if err != nil {
		t.Fatal(err)
	}
	if back.Expect.Profile != tr.Expect.Profile {
		t.Fatalf("read back %+v, wrote %+v", back.Expect.Profile, tr.Expect.Profile)
	}
}

func TestProfileRefusesUnknownChoiceOrValue(t *testing.T) {
	tr, err := ReadFile(filepath.Join("testdata", "good", "dedup-and-checkpoints.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	for member, want := range map[string]string{
		`"profile": {"ack": "drops"}`:                 `expect.profile.ack: unknown value "drops" for choice "ack"`,
		`"profile": {"acks": "deletes"}`:              `expect.profile.acks: unknown choice "acks"`,
		`"profile": {"ack": 1}`:                       `expect.profile.ack: must be a string`,
		`"profile": "live-at-until"`:                  `expect.profile: must be an object`,
		`"profile": {"ack": "keeps", "ack": "keeps"}`: `expect.profile.ack`,
	} {
		bad := bytes.Replace(b, []byte(`"diverges_at": -1`), []byte(`"diverges_at": -1, `+member), 1)
		_, err := Unmarshal(bad, "bad")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", member, err, want)
		}
	}
}
