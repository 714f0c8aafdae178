package profile_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pconform/pconform/profile"
	"github.com/pconform/pconform/traces"
)

func TestReadRefusesWhatIsNotAProfile(t *testing.T) {
	tests := []struct {
		name, in string
		sentinel error
		want     string // the whole message
	}{
		{"unknown choice", "{\n  \"name\": \"x\",\n  \"lease_at_untill\": \"live\"\n}", profile.ErrUnknownChoice,
			`profile: line 3: unknown choice "lease_at_untill"`},
		{"unknown value", "{\"ack\": \"drops\"}", profile.ErrUnknownValue,
			`profile: line 1: unknown value "drops" for choice "ack" (it takes "keeps", "deletes")`},
		{"empty wording", "{\n\"reason_max_attempts\": \" \"}", profile.ErrUnknownValue,
			`profile: line 2: unknown value: choice "reason_max_attempts" needs a non-empty wording`},
		{"not a string", "{\"ack\": true}", profile.ErrSyntax, `profile: line 1: malformed profile: member "ack" must be a string, got true`},
		{"an object value", "{\"ack\": {}}", profile.ErrSyntax, `member "ack" must be a string, got an object`},
		{"twice", "{\"ack\": \"keeps\",\n \"ack\": \"deletes\"}", profile.ErrSyntax, `profile: line 2: malformed profile: member "ack" is given twice`},
		{"array", "[]", profile.ErrSyntax, `a profile is a JSON object, got an array`},
		{"empty file", "", profile.ErrSyntax, `unexpected end of the file`},
		{"cut short", "{\"ack\": ", profile.ErrSyntax, `unexpected end of the file`},
		{"trailing", "{} {}", profile.ErrSyntax, `data after the profile's object`},
		{"bad json", "{\n\n\"ack\" \"keeps\"}", profile.ErrSyntax, `profile: line 3: malformed profile`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := profile.Read(strings.NewReader(tt.in))
			if err == nil {
				t.Fatalf("Read(%q) = nil error", tt.in)
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("error %v does not wrap %v", err, tt.sentinel)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestReadFileNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(path, []byte("{\n  \"fetch_sweep\": \"never\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := profile.ReadFile(path)
	want := path + `: line 2: unknown value "never" for choice "fetch_sweep"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("ReadFile error = %v, want it to contain %q", err, want)
	}
}

func TestZeroProfileIsDefault(t *testing.T) {
	var p profile.Profile
	if !p.IsDefault() || p.String() != profile.DefaultName {
		t.Fatalf("zero profile: IsDefault %v, String %q", p.IsDefault(), p.String())
	}
	for _, c := range profile.Choices {
		v, ok := p.Value(c.Name)
		if !ok || v != c.DefaultValue() {
			t.Errorf("zero profile's %s = %q, %v; want the default %q", c.Name, v, ok, c.DefaultValue())
		}
	}
	got, err := profile.Read(strings.NewReader("{}"))
	if err != nil || got != p {
		t.Fatalf("Read({}) = %+v, %v; want the zero profile", got, err)
	}
}

// TestEveryChoiceSetsAndRoundTrips sets each choice to its alternative alone and checks that it
// is the only change, and that the encoding reads back equal.
func TestEveryChoiceSetsAndRoundTrips(t *testing.T) {
	for _, c := range profile.Choices {
		t.Run(c.Name, func(t *testing.T) {
			alt := "another wording"
			if c.Switch() {
				alt = c.Values[1]
			}
			p := profile.Profile{Name: "one-" + c.Name}
			if err := p.Set(c.Name, alt); err != nil {
				t.Fatal(err)
			}
			ch := p.Changed()
			if len(ch) != 1 || ch[0] != (profile.Setting{Choice: c.Name, Value: alt}) {
				t.Fatalf("Changed() = %v, want only %s=%s", ch, c.Name, alt)
			}
			var buf bytes.Buffer
			if err := p.Encode(&buf); err != nil {
				t.Fatal(err)
			}
			back, err := profile.Read(&buf)
			if err != nil || back != p {
				t.Fatalf("round trip of %+v gave %+v, %v", p, back, err)
			}
			if err := p.Set(c.Name, c.DefaultValue()); err != nil || !p.IsDefault() {
				t.Fatalf("setting the default back: %v, IsDefault %v", err, p.IsDefault())
			}
		})
	}
}

// TestDefaultWordingsAreTheTraceReasons keeps the wordings' defaults equal to the reasons the
// trace format names.
func TestDefaultWordingsAreTheTraceReasons(t *testing.T) {
	var p profile.Profile
	for got, want := range map[string]string{
		p.ReasonMaxAttemptsWording():         traces.ReasonMaxAttempts,
		p.ReasonLeaseExpiredWording():        traces.ReasonLeaseExpired,
		p.ReasonMaxDeliveryAttemptsWording(): traces.ReasonMaxDeliveryAttempts,
	} {
		if got != want {
			t.Errorf("default wording %q, the trace format says %q", got, want)
		}
	}
}

// TestTableIsWellFormed: unique names, fields and P names; two values for a switch, a default for
// a wording; an anchor of docs/semantics.md.
func TestTableIsWellFormed(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "semantics.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range profile.Choices {
		for _, k := range []string{"name " + c.Name, "field " + c.Field, "p " + c.P} {
			if seen[k] {
				t.Errorf("%s appears twice", k)
			}
			seen[k] = true
		}
		if c.Switch() && (len(c.Values) != 2 || c.Values[0] == c.Values[1] || c.Default != "") {
			t.Errorf("%s: a switch has two different values and no wording", c.Name)
		}
		if !c.Switch() && c.Default == "" {
			t.Errorf("%s: a wording needs its default text", c.Name)
		}
		heading := "## " + strings.ReplaceAll(c.Anchor, "-", " ")
		if !strings.Contains(strings.ToLower(string(doc)), heading) {
			t.Errorf("%s: docs/semantics.md has no section %q", c.Name, heading)
		}
	}
}

// TestShippedProfilesRead reads every profile of profiles/ and checks it is named as its file and
// differs from the default.
func TestShippedProfilesRead(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "profiles", "*.json"))
	if err != nil || len(files) < 2 {
		t.Fatalf("profiles/: %d files, %v; want at least two", len(files), err)
	}
	for _, f := range files {
		p, err := profile.ReadFile(f)
		if err != nil {
			t.Error(err)
			continue
		}
		if want := strings.TrimSuffix(filepath.Base(f), ".json"); p.Name != want {
			t.Errorf("%s: name %q, want %q", f, p.Name, want)
		}
		if p.IsDefault() {
			t.Errorf("%s changes no choice", f)
		}
	}
}

// TestSameComparesChoicesOnly: the choices decide whether two profiles are the same; a name, a
// description or a wording written out as its default text does not.
func TestSameComparesChoicesOnly(t *testing.T) {
	base := profile.Profile{Name: "a", Description: "One store.", AckDeletes: true, ReasonMaxAttempts: "spent"}
	for _, tc := range []struct {
		name string
		q    profile.Profile
		want bool
	}{
		{"the same value", base, true},
		{"another name and description", profile.Profile{Name: "b", Description: "Another store, in other words.", AckDeletes: true, ReasonMaxAttempts: "spent"}, true},
		{"another switch", profile.Profile{Name: "a", Description: "One store.", ReasonMaxAttempts: "spent"}, false},
		{"another wording", profile.Profile{Name: "a", Description: "One store.", AckDeletes: true, ReasonMaxAttempts: "used up"}, false},
		{"a wording written out as its default", profile.Profile{Name: "a", Description: "One store.", AckDeletes: true, ReasonMaxAttempts: "spent", ReasonLeaseExpired: traces.ReasonLeaseExpired}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := base.Same(tc.q); got != tc.want {
				t.Errorf("Same = %v, want %v", got, tc.want)
			}
			if got := tc.q.Same(base); got != tc.want {
				t.Errorf("Same, the other way round, = %v, want %v", got, tc.want)
			}
		})
	}
}
