// Package integration holds tests of ward's library against independent
// implementations that the library module must not require: other
// password-hashing libraries, and an AWS-KMS-compatible server for
// kms/awskms (integration/awskms), which an adopter requiring kms/awskms
// must not download. The library module keeps at most eight direct
// requirements (CONTRIBUTING.md, "Modules and walls"); tests that need more
// live here, in their own module, as does the test that an adopter's module
// outside the workspace can require the library and kms/awskms with no
// replace directive (TestRequirable).
package integration
