// Package integration holds tests of ward's library against independent
// implementations that the library module must not require: other
// password-hashing libraries today. The library module keeps at most eight
// direct requirements (CONTRIBUTING.md, "Modules and walls"); tests that
// need more live here, in their own module.
package integration
