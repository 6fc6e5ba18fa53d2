/* timing.h: what the C peers share: a monotonic clock in milliseconds and
   the process's peak resident memory. */
#include <stdio.h>
#include <time.h>

/* peak_kib is this process's peak resident memory (VmHWM), or 0. */
static long peak_kib(void) {
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = 0;
	if (!f) return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
	fclose(f);
	return kib;
}

static double now_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
