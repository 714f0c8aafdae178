package traces

import (
	"io/fs"
	"testing"
)

// TestStepValidatorMatchesValidate holds StepValidator to Validate: every step of the committed
// traces, and each of them broken in one place, is checked both ways, one validator reused for
// all, and must get the same answer as Validate gives for the one-step trace.
func TestStepValidatorMatchesValidate(t *testing.T) {
	breaks := []struct {
		name string
		f    func(*Step)
	}{
		{"as is", func(*Step) {}},
		{"negative at", func(s *Step) { s.At = -1 }},
		{"no mailbox", func(s *Step) { s.Args.Mailbox = "" }},
		{"bad utf-8 id", func(s *Step) { s.Args.ID = "\xff" }},
		{"a limit", func(s *Step) { s.Args.Limit = 3 }},
		{"a lease_for of 0", func(s *Step) { s.Args.LeaseFor = 0 }},
		{"a negative token", func(s *Step) { s.Args.Token = -2 }},
		{"a token", func(s *Step) { s.Args.Token = 1 }},
		{"an unknown profile", func(s *Step) { s.Args.Profile = "nope" }},
		{"an unknown action", func(s *Step) { s.Result.Action = "nope" }},
		{"an action", func(s *Step) { s.Result.Action = ActionAcked }},
		{"an affected count", func(s *Step) { s.Result.Affected = 2 }},
		{"a message with token 1", func(s *Step) { s.Result.Message = &Message{ID: "m", Attempts: 1, Token: 1} }},
		{"a claim of two tokens", func(s *Step) {
			s.Result.Claimed = []Claimed{{ID: "a", DeliveryAttempts: 1, Token: 1}, {ID: "b", DeliveryAttempts: 1, Token: 2}}
		}},
		{"an unknown op", func(s *Step) { s.Op = "nope" }},
	}
	headers := []Trace{
		{Format: Format, Name: "event", Origin: Origin{Kind: OriginObserved}, Expect: Expect{DivergesAt: -1}},
		{Format: Format, Name: "event", Origin: Origin{Kind: OriginObserved}, Expect: Expect{Variant: "raw-attempts", DivergesAt: -1}},
	}
	var steps []Step
	err := fs.WalkDir(Committed(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(Committed(), path)
		if err != nil {
			return err
		}
		tr, err := Unmarshal(data, path)
		if err != nil {
			return err
		}
		steps = append(steps, tr.Steps...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) < 100 {
		t.Fatalf("only %d committed steps", len(steps))
	}
	for _, h := range headers {
		sv, err := NewStepValidator(&h)
		if err != nil {
			t.Fatal(err)
		}
		failed, ok := 0, 0
		for _, s := range steps {
			for _, b := range breaks {
				st := s
				st.Args, st.Result = s.Args, s.Result
				if s.Result.Message != nil {
					m := *s.Result.Message
					st.Result.Message = &m
				}
				st.Result.Claimed = append([]Claimed(nil), s.Result.Claimed...)
				b.f(&st)
				one := h
				one.Steps = []Step{st}
				want := Validate(&one)
				got := sv.Step(&st)
				if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
					t.Fatalf("%s, %s broken by %s: StepValidator says %v, Validate %v", h.Expect.Variant, s.Op, b.name, got, want)
				}
				if got != nil {
					failed++
				} else {
					ok++
				}
			}
		}
		if failed == 0 || ok == 0 {
			t.Fatalf("the cases do not discriminate: %d valid, %d invalid", ok, failed)
		}
	}
}

// TestNewStepValidatorChecksTheHeader: a bad header is refused once, up front.
func TestNewStepValidatorChecksTheHeader(t *testing.T) {
	for _, h := range []*Trace{nil, {Format: Format, Origin: Origin{Kind: OriginObserved}, Expect: Expect{DivergesAt: -1}},
		{Format: Format, Name: "x", Origin: Origin{Kind: OriginObserved}, Expect: Expect{DivergesAt: 3}}} {
		if _, err := NewStepValidator(h); err == nil {
			t.Errorf("NewStepValidator(%+v) accepted a bad header", h)
		}
	}
}
