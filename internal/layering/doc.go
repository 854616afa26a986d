// Package layering holds the test of the repository's import layering
// (docs/design.md §1, "Layering"): core below functions below cmd, the
// packages of core in declared layers, and no code the product runs
// importing the dev and test tooling of internal/ or scripts/; and the
// checks that keep one build serving several steps of make test (§1, "make
// test on a 2-core machine"): no file built only with or only without -race,
// and a tool both modules declare built from the same module versions. It
// has no code of its own.
package layering
