// Package layering holds the test of the repository's import layering
// (docs/design.md §1, "Layering"): core below functions below cmd, the
// packages of core in declared layers, and no code the product runs
// importing the dev and test tooling of internal/ or scripts/. It has no
// code of its own.
package layering
