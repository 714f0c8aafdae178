// Package suite lists pconform's analyzers, so that the vet command, tests and any other driver
// run the same set. It adds no checks of its own.
package suite
