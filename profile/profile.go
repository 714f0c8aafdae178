package profile

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Sentinel errors of [Profile.Set], [Read] and [ReadFile], for callers that branch on them.
var (
	// ErrUnknownChoice: a name that is not in [Choices].
	ErrUnknownChoice = errors.New("profile: unknown choice")
	// ErrUnknownValue: a value a switch does not take, or an empty wording.
	ErrUnknownValue = errors.New("profile: unknown value")
	// ErrSyntax: the file is not a JSON object of string members.
	ErrSyntax = errors.New("profile: malformed profile")
)

// DefaultName is the name String gives the default profile when it has none.
const DefaultName = "default"

// Lookup returns the choice named name.
func Lookup(name string) (Choice, bool) {
	for _, c := range Choices {
		if c.Name == name {
			return c, true
		}
	}
	return Choice{}, false
}

// Names lists the choices' names in table order.
func Names() []string {
	out := make([]string, len(Choices))
	for i, c := range Choices {
		out[i] = c.Name
	}
	return out
}

// Set gives the choice named name the value value. It returns an error wrapping
// [ErrUnknownChoice] for a name not in [Choices], and one wrapping [ErrUnknownValue] for a value
// the choice does not take (a switch takes its two values; a wording any non-empty text). A
// wording set to its default text is stored as "", so equal choices give equal profiles.
func (p *Profile) Set(name, value string) error {
	c, ok := Lookup(name)
	if !ok {
		return fmt.Errorf("%w %q (the choices are %s)", ErrUnknownChoice, name, quoteAll(Names()))
	}
	if c.Switch() {
		if value != c.Values[0] && value != c.Values[1] {
			return fmt.Errorf("%w %q for choice %q (it takes %s)", ErrUnknownValue, value, name, quoteAll(c.Values))
		}
	} else {
		if strings.TrimSpace(value) == "" {
			return fmt.Errorf("%w: choice %q needs a non-empty wording", ErrUnknownValue, name)
		}
		if value == c.Default {
			value = ""
		}
	}
	p.set(name, value)
	return nil
}

// Value returns the value p takes for the choice named name (a wording's text, its default
// when p leaves it unset), and false for a name not in [Choices].
func (p Profile) Value(name string) (string, bool) { return p.get(name) }

// Changed lists, in table order, the choices p settles otherwise than the default profile, each
// with its value.
func (p Profile) Changed() []Setting {
	var out []Setting
	for _, c := range Choices {
		v, _ := p.get(c.Name)
		if v != c.DefaultValue() {
			out = append(out, Setting{Choice: c.Name, Value: v})
		}
	}
	return out
}

// Setting is one choice's value.
type Setting struct{ Choice, Value string }

// IsDefault reports whether p makes every choice as the default profile does (whatever its name).
func (p Profile) IsDefault() bool { return len(p.Changed()) == 0 }

// Same reports whether p and q make the same choices, whatever their names and descriptions. A
// wording given its default text is the default, as [Profile.Set] stores it.
func (p Profile) Same(q Profile) bool { return slices.Equal(p.Changed(), q.Changed()) }

// String names the profile and lists its changed choices, as in
// `live-at-until (lease_at_until=live, ack=deletes)`; the default profile is `default`.
func (p Profile) String() string {
	name := p.Name
	if name == "" {
		name = DefaultName
		if !p.IsDefault() {
			name = "unnamed"
		}
	}
	ch := p.Changed()
	if len(ch) == 0 {
		return name
	}
	parts := make([]string, len(ch))
	for i, s := range ch {
		parts[i] = s.Choice + "=" + fmt.Sprintf("%q", s.Value)
		if c, _ := Lookup(s.Choice); c.Switch() {
			parts[i] = s.Choice + "=" + s.Value
		}
	}
	return name + " (" + strings.Join(parts, ", ") + ")"
}

func quoteAll(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}
