package peers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// JVMIntrinsics selects the JVM's AES intrinsics for AESGCM.
type JVMIntrinsics int

const (
	// IntrinsicsOn is the JVM's default.
	IntrinsicsOn JVMIntrinsics = iota
	// AESIntrinsicsOff is -XX:-UseAESIntrinsics alone, as the field report
	// switched them (recent JVMs need -XX:+UnlockDiagnosticVMOptions too).
	AESIntrinsicsOff
	// AllIntrinsicsOff also switches off the AES-CTR and GHASH intrinsics
	// that GCM uses.
	AllIntrinsicsOff
)

func (m JVMIntrinsics) flags() []string {
	switch m {
	case AESIntrinsicsOff:
		return []string{"-XX:+UnlockDiagnosticVMOptions", "-XX:-UseAESIntrinsics"}
	case AllIntrinsicsOff:
		return []string{"-XX:+UnlockDiagnosticVMOptions", "-XX:-UseAESIntrinsics", "-XX:-UseAESCTRIntrinsics", "-XX:-UseGHASHIntrinsics"}
	}
	return nil
}

// String names the setting: "on", "aes-off", "all-off".
func (m JVMIntrinsics) String() string { return [...]string{"on", "aes-off", "all-off"}[m] }

const installJDK = "apt-get install default-jdk-headless"

// javac compiles a Java peer with classpath and returns the class folder.
func (r *Runner) javac(ctx context.Context, peer, src string, classpath ...string) (string, error) {
	return r.once(src, func() (string, error) { return r.compileJava(ctx, peer, src, classpath) })
}

func (r *Runner) compileJava(ctx context.Context, peer, src string, classpath []string) (string, error) {
	javac, err := need(peer, "javac", installJDK)
	if err != nil {
		return "", err
	}
	if _, err := need(peer, "java", installJDK); err != nil {
		return "", err
	}
	args := []string{"-d", r.path("java")}
	if len(classpath) > 0 {
		args = append(args, "-cp", strings.Join(classpath, ":"))
	}
	if b, err := execOutput(ctx, javac, append(args, r.path(src))...); err != nil {
		return "", fmt.Errorf("peers: javac %s: %w: %s", src, err, b)
	}
	return r.path("java"), nil
}

// AESGCMRound is the MB/s of every timed round at one size.
type AESGCMRound struct {
	Size int       `json:"size"`
	MBps []float64 `json:"mbps"`
}

// AESGCM runs java/AesGcmBench: AES-128-GCM through javax.crypto for each
// size (bytes → encryptions per round), with the given intrinsics.
func (r *Runner) AESGCM(ctx context.Context, m JVMIntrinsics, rounds int, warmMillis int, sizes [][2]int) ([]AESGCMRound, error) {
	classes, err := r.javac(ctx, "java/AesGcmBench", "java/AesGcmBench.java")
	if err != nil {
		return nil, err
	}
	var cs []string
	for _, s := range sizes {
		cs = append(cs, fmt.Sprintf("%d:%d", s[0], s[1]))
	}
	args := append(m.flags(), "-cp", classes, "AesGcmBench", strconv.Itoa(rounds), strconv.Itoa(warmMillis), strings.Join(cs, ","))
	var out []AESGCMRound
	return out, runJSON(ctx, &out, "java", args...)
}

// BouncyCastleArgon2 is what java/Argon2Bench measures.
type BouncyCastleArgon2 struct {
	FirstMS   float64   `json:"first_ms"`   // the first hash in a fresh JVM
	WarmMS    []float64 `json:"warm_ms"`    // warm hashes
	Burst10MS []float64 `json:"burst10_ms"` // rounds of 10 concurrent hashes
}

// bcprovJars are where Debian's libbcprov-java puts BouncyCastle.
var bcprovJars = []string{"/usr/share/java/bcprov.jar", "/usr/share/java/bcprov-jdk18on.jar"}

// Argon2BouncyCastle runs java/Argon2Bench in a fresh JVM.
func (r *Runner) Argon2BouncyCastle(ctx context.Context, warm, rounds int) (BouncyCastleArgon2, error) {
	jar := ""
	for _, j := range bcprovJars {
		if _, err := os.Stat(j); err == nil {
			jar = j
		}
	}
	if jar == "" {
		return BouncyCastleArgon2{}, &MissingError{Peer: "java/Argon2Bench", Need: "BouncyCastle", Install: "apt-get install libbcprov-java"}
	}
	classes, err := r.javac(ctx, "java/Argon2Bench", "java/Argon2Bench.java", jar)
	if err != nil {
		return BouncyCastleArgon2{}, err
	}
	var out BouncyCastleArgon2
	err = runJSON(ctx, &out, "java", "-cp", jar+":"+classes, "Argon2Bench", strconv.Itoa(warm), strconv.Itoa(rounds))
	return out, err
}

// RubyAESCBC is what ruby/aes_cbc.rb measures: seconds per 1,000
// operations, per round.
type RubyAESCBC struct {
	TextChars int       `json:"text_chars"`
	TextBytes int       `json:"text_bytes"`
	EncryptS  []float64 `json:"encrypt_s"`
	DecryptS  []float64 `json:"decrypt_s"`
}

// AESCBCRuby runs ruby/aes_cbc.rb.
func (r *Runner) AESCBCRuby(ctx context.Context, rounds int) (RubyAESCBC, error) {
	ruby, err := need("ruby/aes_cbc.rb", "ruby", "apt-get install ruby")
	if err != nil {
		return RubyAESCBC{}, err
	}
	var out RubyAESCBC
	return out, runJSON(ctx, &out, ruby, r.path("ruby/aes_cbc.rb"), strconv.Itoa(rounds))
}

// PythonHandshake is what python/x25519_handshake.py measures.
type PythonHandshake struct {
	DelayMS   float64   `json:"delay_ms"`
	MS        []float64 `json:"ms"`
	WireBytes int       `json:"wire_bytes"`
}

// systemPython is the interpreter whose packages Debian installs.
const systemPython = "/usr/bin/python3"

// X25519Python runs python/x25519_handshake.py with Debian's Python and
// its cryptography package.
func (r *Runner) X25519Python(ctx context.Context, delayMS, runs int) (PythonHandshake, error) {
	const peer = "python/x25519_handshake.py"
	if _, err := os.Stat(systemPython); err != nil {
		return PythonHandshake{}, &MissingError{Peer: peer, Need: systemPython, Install: "apt-get install python3 python3-cryptography"}
	}
	if _, err := execOutput(ctx, systemPython, "-c", "import cryptography"); err != nil {
		return PythonHandshake{}, &MissingError{Peer: peer, Need: "Python's cryptography", Install: "apt-get install python3-cryptography"}
	}
	var out PythonHandshake
	return out, runJSON(ctx, &out, systemPython, r.path(peer), strconv.Itoa(delayMS), strconv.Itoa(runs))
}

// msList is the output of the hashing peers: elapsed and CPU
// milliseconds per hash and the process's own peak resident memory (VmHWM,
// which unlike the rusage of a child does not include what the parent had
// before exec).
type msList struct {
	MS      []float64 `json:"ms"`
	CPUMS   []float64 `json:"cpu_ms"`
	PeakKiB float64   `json:"peak_rss_kib"`
}

// hashes checks that a peer timed every hash on both clocks.
func (l msList) hashes(n int) (Hashes, error) {
	if len(l.MS) != n || len(l.CPUMS) != n {
		return Hashes{}, fmt.Errorf("peer timed %d and %d of %d hashes", len(l.MS), len(l.CPUMS), n)
	}
	return Hashes{MS: l.MS, CPUMS: l.CPUMS, PeakRSSMB: l.PeakKiB / 1024}, nil
}

// RefArgon2Env names a folder holding a build of phc-winner-argon2 (its
// include/ and libargon2.a), for example one made with -march=native, to
// measure instead of Debian's portable libargon2.
const RefArgon2Env = "WARD_ARGON2_REF"

// Hashes are a peer's milliseconds per hash, elapsed and of the process's
// CPU time (all its threads), and the process's peak resident memory.
type Hashes struct {
	MS        []float64
	CPUMS     []float64
	PeakRSSMB float64
}

// Argon2C runs c/argon2_ref.c: Argon2id in the reference C, from the
// build in $WARD_ARGON2_REF if set, else Debian's libargon2. It returns the
// hashes' times and which library ran.
func (r *Runner) Argon2C(ctx context.Context, m, t, p uint32, n int) (Hashes, string, error) {
	flags, lib := []string{"-largon2", "-lpthread"}, "Debian libargon2 (portable build)"
	if ref := os.Getenv(RefArgon2Env); ref != "" {
		flags = []string{"-I" + filepath.Join(ref, "include"), filepath.Join(ref, "libargon2.a"), "-lpthread"}
		lib = "phc-winner-argon2 built in " + ref
	}
	bin, err := r.buildC(ctx, "c/argon2_ref.c", "c/argon2_ref.c", "argon2_ref", flags, "apt-get install libargon2-dev, or set "+RefArgon2Env)
	if err != nil {
		return Hashes{}, "", err
	}
	var out msList
	if err := runJSON(ctx, &out, bin, strconv.Itoa(int(m)), strconv.Itoa(int(t)), strconv.Itoa(int(p)), strconv.Itoa(n)); err != nil {
		return Hashes{}, lib, err
	}
	h, err := out.hashes(n)
	return h, lib, err
}

// Argon2Sodium runs c/sodium_argon2.c: libsodium's Argon2id (one lane).
func (r *Runner) Argon2Sodium(ctx context.Context, m, t uint32, n int) (Hashes, error) {
	bin, err := r.buildC(ctx, "c/sodium_argon2.c", "c/sodium_argon2.c", "sodium_argon2", []string{"-lsodium"}, "apt-get install libsodium-dev")
	if err != nil {
		return Hashes{}, err
	}
	var out msList
	if err := runJSON(ctx, &out, bin, strconv.Itoa(int(m)), strconv.Itoa(int(t)), strconv.Itoa(n)); err != nil {
		return Hashes{}, err
	}
	return out.hashes(n)
}

// PythonEnv names a Python interpreter that has the ward package
// installed (pip install ./python), for the Python reader's peer.
const PythonEnv = "WARD_PYTHON"

// installWardPython is what brings the Python package.
const installWardPython = "python3 -m venv V && V/bin/pip install ./python, then set WARD_PYTHON=V/bin/python,"

// PythonField is what the Python package's benchmark (python3 -m
// ward.bench --json, python/src/ward/bench.py) measures: nanoseconds per
// value per round of the ward Python package's seal and open, and of raw
// AES-GCM from the same cryptography package, interleaved: the AEAD call
// alone (Raw…) and a value that carries its nonce (RawStored…, as the Go
// lab's raw AES-GCM).
type PythonField struct {
	Version         string    `json:"version"`
	Algorithm       string    `json:"alg"`
	Size            int       `json:"size"`
	RawSealNs       []float64 `json:"raw_seal_ns"`
	RawStoredSealNs []float64 `json:"raw_stored_seal_ns"`
	SealNs          []float64 `json:"seal_ns"`
	RawOpenNs       []float64 `json:"raw_open_ns"`
	RawStoredOpenNs []float64 `json:"raw_stored_open_ns"`
	OpenNs          []float64 `json:"open_ns"`
	// The seal's parts, each alone in the same rounds: raw AES-GCM on a
	// value with its nonce and the seal's associated data, and the
	// context check (its AES block, CRC-32C and masking).
	RawStoredADSealNs []float64 `json:"raw_stored_ad_seal_ns"`
	CheckNs           []float64 `json:"check_ns"`
}

// WardPython runs the Python package's benchmark with $WARD_PYTHON (else
// python3 if it imports the package) on a keyring file and its master key
// file: one size, the keyring's primary.
func (r *Runner) WardPython(ctx context.Context, keyringPath, masterKeyPath string, size, rounds, perRound int) (PythonField, error) {
	const peer = "ward.bench (python/)"
	py := os.Getenv(PythonEnv)
	if py == "" {
		py = "python3"
	}
	if _, err := execOutput(ctx, py, "-c", "import ward.bench"); err != nil {
		return PythonField{}, &MissingError{Peer: peer, Need: "the ward Python package", Install: installWardPython}
	}
	var out PythonField
	err := runJSON(ctx, &out, py, "-m", "ward.bench", "--keyring", keyringPath, "--master-key-file", masterKeyPath,
		"--size", strconv.Itoa(size), "--rounds", strconv.Itoa(rounds), "--values", strconv.Itoa(perRound), "--json")
	return out, err
}

// JavaEnv names the class path of ward's JVM peers (java/ward-core,
// java/ward-spring-security and their dependencies): after `mvn -f
// java/pom.xml package -DskipTests`, java/ward-lab/target/lib/* holds all
// of it.
const JavaEnv = "WARD_JAVA_CLASSPATH"

// installWardJava is what brings ward's JVM core.
const installWardJava = "mvn -f java/pom.xml package -DskipTests, then set WARD_JAVA_CLASSPATH='java/ward-lab/target/lib/*',"

// JavaField is what java/WardJavaBench measures: nanoseconds per value per
// round of ward-java's seal and open, and of raw JDK AES-GCM on a value
// that carries its IV, interleaved in one JVM.
type JavaField struct {
	Algorithm string    `json:"alg"`
	Size      int       `json:"size"`
	RawSealNs []float64 `json:"raw_seal_ns"`
	SealNs    []float64 `json:"seal_ns"`
	RawOpenNs []float64 `json:"raw_open_ns"`
	OpenNs    []float64 `json:"open_ns"`
}

// WardJava runs java/WardJavaBench against $WARD_JAVA_CLASSPATH on a
// keyring file and its master key file: rounds of perRound values after
// warmMillis of warm-up.
func (r *Runner) WardJava(ctx context.Context, keyringPath, masterKeyPath string, size, rounds, perRound, warmMillis int) (JavaField, error) {
	const peer = "java/WardJavaBench"
	cp := os.Getenv(JavaEnv)
	if cp == "" {
		return JavaField{}, &MissingError{Peer: peer, Need: "ward's JVM core (java/)", Install: installWardJava}
	}
	classes, err := r.javac(ctx, peer, "java/WardJavaBench.java", cp)
	if err != nil {
		return JavaField{}, err
	}
	var out JavaField
	err = runJSON(ctx, &out, "java", "-cp", cp+":"+classes, "WardJavaBench", keyringPath, masterKeyPath,
		strconv.Itoa(size), strconv.Itoa(rounds), strconv.Itoa(perRound), strconv.Itoa(warmMillis))
	return out, err
}

// JavaPassword is what java/WardJavaPassword measures, in milliseconds:
// Spring Security's Argon2PasswordEncoder (v5.8 defaults) and ward-java's
// WardPasswordEncoder at the same parameters and at ward's default preset,
// interleaved in one JVM, then rounds of 10 concurrent encodes of each at
// the report's parameters.
type JavaPassword struct {
	SpringEncode      []float64 `json:"spring_encode_ms"`
	WardEncodeSame    []float64 `json:"ward_encode_same_ms"`
	WardEncode        []float64 `json:"ward_encode_ms"`
	SpringMatches     []float64 `json:"spring_matches_ms"`
	WardMatchesSpring []float64 `json:"ward_matches_spring_hash_ms"`
	SpringBurst10     []float64 `json:"spring_burst10_ms"`
	WardBurst10Same   []float64 `json:"ward_burst10_same_ms"`
}

// WardJavaPassword runs java/WardJavaPassword against $WARD_JAVA_CLASSPATH:
// warm interleaved rounds of every case, then rounds of 10 concurrent
// encodes.
func (r *Runner) WardJavaPassword(ctx context.Context, warm, rounds int) (JavaPassword, error) {
	const peer = "java/WardJavaPassword"
	cp := os.Getenv(JavaEnv)
	if cp == "" {
		return JavaPassword{}, &MissingError{Peer: peer, Need: "ward's JVM modules (java/)", Install: installWardJava}
	}
	classes, err := r.javac(ctx, peer, "java/WardJavaPassword.java", cp)
	if err != nil {
		return JavaPassword{}, err
	}
	var out JavaPassword
	err = runJSON(ctx, &out, "java", "-cp", cp+":"+classes, "WardJavaPassword", strconv.Itoa(warm), strconv.Itoa(rounds))
	return out, err
}
