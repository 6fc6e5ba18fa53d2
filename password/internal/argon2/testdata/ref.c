/* ref computes Argon2 with the reference C library (Debian's libargon2)
   for TestReferenceC: it reads lines "variant t m p taglen pw salt secret ad"
   (hex fields, "-" for empty) and prints each tag in hex. It is built by the
   test with the system compiler; the Go module has no cgo. */
#include <argon2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t unhex(const char *s, unsigned char *out) {
	if (strcmp(s, "-") == 0) return 0;
	size_t n = strlen(s) / 2;
	for (size_t i = 0; i < n; i++) sscanf(s + 2 * i, "%2hhx", &out[i]);
	return n;
}

int main(void) {
	unsigned variant, t, m, p, taglen;
	static char pw[2048], salt[2048], secret[2048], ad[2048];
	static unsigned char bpw[1024], bsalt[1024], bsecret[1024], bad[1024], tag[1024];
	while (scanf("%u %u %u %u %u %2047s %2047s %2047s %2047s", &variant, &t, &m, &p, &taglen, pw, salt, secret, ad) == 9) {
		argon2_context c = {0};
		c.out = tag;
		c.outlen = taglen;
		c.pwdlen = unhex(pw, bpw);
		c.pwd = bpw;
		c.saltlen = unhex(salt, bsalt);
		c.salt = bsalt;
		c.secretlen = unhex(secret, bsecret);
		c.secret = c.secretlen ? bsecret : NULL;
		c.adlen = unhex(ad, bad);
		c.ad = c.adlen ? bad : NULL;
		c.t_cost = t;
		c.m_cost = m;
		c.lanes = c.threads = p;
		c.version = ARGON2_VERSION_13;
		int rc = argon2_ctx(&c, (argon2_type)variant);
		if (rc != ARGON2_OK) {
			printf("error %s\n", argon2_error_message(rc));
			continue;
		}
		for (unsigned i = 0; i < taglen; i++) printf("%02x", tag[i]);
		printf("\n");
	}
	return 0;
}
