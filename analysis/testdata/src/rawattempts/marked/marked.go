// Package marked declares the rawattempts marks; package a uses them across the package
// boundary, so the marks must travel as facts.
package marked

// Job is a work item of some other queue that counts attempts the way the store does.
type Job struct {
	ID string
	//pconform:storedattempts
	Tries       int // want Tries:"storedattempts"
	MaxAttempts int
	Name        string //pconform:storedattempts // want `//pconform:storedattempts on Name has no effect: the field is not an integer`
}

// Decide is a retry decision outside any RetryPolicy.
//
//pconform:retrydecision
func Decide(attempt int64) bool { return attempt < 5 } // want Decide:"retrydecision"

// Bump is this queue's effective-attempts helper.
//
//pconform:effectiveattempts
func Bump(stored int) int { return stored + 1 } // want Bump:"effectiveattempts"

// Policy decides retries for jobs.
type Policy interface {
	//pconform:retrydecision
	Again(err error, attempt int) bool // want Again:"retrydecision"
}

//pconform:retrydecision // want `//pconform:retrydecision on Label has no effect: it has no integer parameter`
func Label(s string) string { return s }

//pconform:effectiveattempts // want `//pconform:effectiveattempts on Describe has no effect: it must return one integer`
func Describe(stored int) string { return "" }
