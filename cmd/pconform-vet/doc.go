// Command pconform-vet runs pconform's static analyzers (see docs/analyzers.md).
//
// Standalone, with go/packages loading:
//
//	go run ./cmd/pconform-vet ./...
//
// As a vet tool, which also checks test files and caches results:
//
//	go build -o bin/pconform-vet ./cmd/pconform-vet
//	go vet -vettool=$(pwd)/bin/pconform-vet ./...
//
// Flags select analyzers (-txerr=false) and apply suggested fixes (-fix); -help lists them.
// The exit status is 0 when nothing is reported, 3 when diagnostics were reported, 1 on a
// failure to load or analyse.
package main
