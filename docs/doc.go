// Package docs has no code. Its tests hold the user pages (README.md and docs/*.md) to the
// rule that they say what a thing is, how to run it and what its output means: a run log, a
// dated section or a commit hash belongs in a dated note under docs/notes/, which the tests do
// not read. They also check that every relative link of a user page leads to a file.
package docs
