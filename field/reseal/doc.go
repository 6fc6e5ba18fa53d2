// Package reseal is ward's migration engine: it brings every value of a
// column up to date while the application keeps serving. A [Job] re-seals
// values under the keyring's primary key, in the current ciphertext
// version and binding, moves values to their subject's newest key, fills
// in blind indexes, and encrypts a column that held plaintext
// (FromPlaintext). It works in batches, one transaction each, and writes a
// row only by compare-and-swap on the value it read, so a row the
// application changed meanwhile is never overwritten; it is safe to kill
// and run again. Workers, shards (several processes) and a rate bound the
// load it puts on the database; one lock per column keeps two jobs apart.
// [Job.Count] is the census: values per key ID, version and binding,
// plaintext and suspect values, and whether the column is done.
//
// ward reseal and ward encrypt-column run it from the command line;
// lifecycle.Rotate runs it over every column a ledger records.
package reseal
