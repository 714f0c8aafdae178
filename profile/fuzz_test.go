package profile_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/pconform/pconform/profile"
)

// FuzzRead: Read never panics, refuses with one of its sentinels, and what it accepts encodes
// to a file it reads back equal. Seeds: testdata/fuzz/FuzzRead.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"name": "x", "lease_at_until": "live", "ack": "deletes"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := profile.Read(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, profile.ErrSyntax) && !errors.Is(err, profile.ErrUnknownChoice) && !errors.Is(err, profile.ErrUnknownValue) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := p.Encode(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := profile.Read(&buf)
		if err != nil || back != p {
			t.Fatalf("accepted %q as %+v; its encoding %q reads back as %+v, %v", data, p, buf.String(), back, err)
		}
	})
}
