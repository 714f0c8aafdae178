package brokenstore

import (
	"fmt"
	"strings"

	"github.com/pconform/pconform/actordelivery"
)

// An edit is one textual change to a store statement: its one occurrence of old becomes new.
// A rule is a list of edits, each naming the conjunct (or the one value) it changes, so the text
// around it stays the store's. An edit whose new equals old changes nothing but still requires
// old to be there: with the store's rules every edit is such a no-op, and building the copies
// checks that each conjunct a rule could change is still where the rule expects it.
type edit struct{ old, new string }

// applyEdits returns text with each edit made in order. The statement's name is for the error:
// an edit whose old text is missing, or occurs more than once, means the store's statement no
// longer has the shape the rule was written for, and a copy built anyway would differ from the
// store in ways no rule says.
func applyEdits(name, text string, edits ...edit) (string, error) {
	for _, ed := range edits {
		switch n := strings.Count(text, ed.old); n {
		case 1:
			text = strings.Replace(text, ed.old, ed.new, 1)
		case 0:
			return "", fmt.Errorf("brokenstore: the store's %s no longer contains %q, the text an edit of its copy expects", name, ed.old)
		default:
			return "", fmt.Errorf("brokenstore: the store's %s contains %q %d times, an edit of its copy expects it once", name, ed.old, n)
		}
	}
	return text, nil
}

// builder makes the copies of one backend's statements from the store's text (storeText) and
// keeps the first error, so that build reads as one assignment per statement.
type builder struct {
	backend actordelivery.Backend
	prefix  string
	err     error
}

// from returns the store's statement name, as the backend runs it, with edits made and {p}
// replaced by the table prefix. After an error it returns "" and keeps the error.
func (b *builder) from(name string, edits ...edit) string {
	if b.err != nil {
		return ""
	}
	text, ok := storeText(b.backend, name)
	if !ok {
		b.err = fmt.Errorf("brokenstore: the store has no statement %s", name)
		return ""
	}
	text, err := applyEdits(name, text, edits...)
	if err != nil {
		b.err = err
		return ""
	}
	return strings.ReplaceAll(text, "{p}", b.prefix)
}
