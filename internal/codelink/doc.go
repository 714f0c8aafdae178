// Package codelink says where in the Go source the code behind a broken variant lives, as
// file:line, so a counterexample page leads from the diverging step to the code that decides it.
//
// Every location is derived, never written down: a variant that replaces a function names it, and
// the running binary knows its file and line; a variant that bends a rule of the store's SQL is a
// field of brokenstore.Rules, and its uses are found by parsing the brokenstore sources, given as
// an fs.FS rooted at the module; a variant of the model's rule (the batch variants) links the
// store function that keeps the rule, named in its catalogue row and found by parsing the
// actordelivery sources. Paths are relative to the module root. The package reads only the
// file system it is given.
package codelink
