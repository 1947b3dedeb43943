// Package docs owns the check that keeps docs/spec.md true: every rule of the
// three interface documents is a row there naming the file that implements
// it and the test that proves it, and the test of this package fails when a
// named file, symbol or test does not exist, or when a Go comment cites a row
// the table does not have. The documents themselves are not in the
// repository; the table is the repository's record of what they require.
//
// It also owns the check that keeps docs/packages.md, the map of the
// packages, true: every package go list finds has a row, each row's imports
// and size are the package's, and imports point down the layers.
package docs
