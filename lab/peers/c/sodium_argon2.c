/* sodium_argon2 times libsodium's Argon2id (crypto_pwhash_argon2id, its
   optimised C, called through the C library rather than a Python binding),
   at the given memory and passes (libsodium's Argon2id has one lane). It
   prints, as JSON, the elapsed and CPU milliseconds of every hash after
   one warm-up.
   Usage: sodium_argon2 M_KIB T N */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "timing.h"

int main(int argc, char **argv) {
	if (argc != 4 || sodium_init() < 0) return 2;
	unsigned long long m = strtoull(argv[1], 0, 10) * 1024, t = strtoull(argv[2], 0, 10);
	int n = atoi(argv[3]);
	const char *pw = "correct horse battery staple";
	unsigned char salt[crypto_pwhash_argon2id_SALTBYTES], out[32];
	memset(salt, 7, sizeof salt);
	if (n < 0 || n > MAX_HASHES) return 2;
	static double ms[MAX_HASHES], cpu[MAX_HASHES];
	for (int i = 0; i <= n; i++) {
		double s = now_ms(), c = cpu_ms();
		if (crypto_pwhash_argon2id(out, sizeof out, pw, strlen(pw), salt, t, m, crypto_pwhash_argon2id_ALG_ARGON2ID13) != 0) return 1;
		if (i > 0) ms[i - 1] = now_ms() - s, cpu[i - 1] = cpu_ms() - c;
	}
	print_times(ms, cpu, n);
	return 0;
}
