package main

import (
	"golang.org/x/tools/go/analysis/multichecker"

	"github.com/pconform/pconform/analysis/suite"
)

func main() {
	multichecker.Main(suite.Analyzers()...)
}
