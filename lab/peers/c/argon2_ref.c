/* argon2_ref times Argon2id in the reference C implementation
   (phc-winner-argon2: Debian's libargon2, or a build the user points the
   lab at, such as one made with -march=native), as one process would use
   it: argon2id_hash_raw allocates, fills and wipes its memory on every
   call. It prints, as JSON, the elapsed and CPU milliseconds of every hash
   after one warm-up, and the process's peak resident memory. Usage: argon2_ref M_KIB T P N */
#include <argon2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "timing.h"

int main(int argc, char **argv) {
	if (argc != 5) return 2;
	unsigned m = atoi(argv[1]), t = atoi(argv[2]), p = atoi(argv[3]);
	int n = atoi(argv[4]);
	const char *pw = "correct horse battery staple";
	unsigned char salt[16], out[32];
	memset(salt, 7, sizeof salt);
	if (n < 0 || n > MAX_HASHES) return 2;
	static double ms[MAX_HASHES], cpu[MAX_HASHES];
	for (int i = 0; i <= n; i++) {
		double s = now_ms(), c = cpu_ms();
		if (argon2id_hash_raw(t, m, p, pw, strlen(pw), salt, sizeof salt, out, sizeof out) != ARGON2_OK) return 1;
		if (i > 0) ms[i - 1] = now_ms() - s, cpu[i - 1] = cpu_ms() - c;
	}
	print_times(ms, cpu, n);
	return 0;
}
