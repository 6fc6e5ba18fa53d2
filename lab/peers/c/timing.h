/* timing.h: what the C peers share: a monotonic clock and the process's
   CPU clock in milliseconds, the process's peak resident memory, and the
   JSON they print. */
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

/* cpu_ms is the CPU time of the whole process, every thread (the reference
   C hashes lanes on threads of its own), in milliseconds. */
static double cpu_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* MAX_HASHES bounds the hashes one process times. */
#define MAX_HASHES 1000

/* print_times prints, as JSON, the elapsed and CPU milliseconds of n
   hashes and the process's peak resident memory. */
static void print_times(const double *ms, const double *cpu, int n) {
	printf("{\"ms\":[");
	for (int i = 0; i < n; i++) printf("%s%.4f", i ? "," : "", ms[i]);
	printf("],\"cpu_ms\":[");
	for (int i = 0; i < n; i++) printf("%s%.4f", i ? "," : "", cpu[i]);
	printf("],\"peak_rss_kib\":%ld}\n", peak_kib());
}
