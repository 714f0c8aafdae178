// The P project holds no Go code. This file makes its directory a module of its own, so that the
// go command's walks of the main module (./..., go mod tidy) never enter it: the P checker writes
// and removes files under PGenerated/ and PCheckerOutput/ while the gate's Go stages run, and a
// directory that vanishes under a walk fails it.
module pconform.invalid/models/p
