package lab

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"golang.org/x/sys/cpu"
)

// Manifest describes the machine and build that produced a results folder.
type Manifest struct {
	Schema    string          `json:"schema"`
	Date      time.Time       `json:"date"`
	CPUModel  string          `json:"cpu_model"`
	CPUFlags  map[string]bool `json:"cpu_flags"`
	Cores     int             `json:"cores"`
	GoVersion string          `json:"go_version"`
	OS        string          `json:"os"`
	Arch      string          `json:"arch"`
	GitCommit string          `json:"git_commit"`
	Profile   string          `json:"profile"`
	Scenarios []string        `json:"scenarios"`
}

// reportedFlags are the CPU features that matter to the scenarios.
var reportedFlags = []string{"aes", "pclmulqdq", "avx2", "avx512f", "vaes", "vpclmulqdq", "sha_ni"}

// NewManifest describes this machine and build.
func NewManifest(profile string, scenarios []string) Manifest {
	m := Manifest{
		Schema:    Schema,
		Date:      time.Now().UTC().Truncate(time.Second),
		Cores:     runtime.NumCPU(),
		GoVersion: runtime.Version(),
		OS:        runtime.GOOS,
		Arch:      runtime.GOARCH,
		Profile:   profile,
		Scenarios: scenarios,
		GitCommit: gitCommit(),
	}
	m.CPUModel, m.CPUFlags = cpuInfo()
	return m
}

// cpuInfo reads /proc/cpuinfo where it exists, and falls back to CPUID
// through x/sys/cpu.
func cpuInfo() (string, map[string]bool) {
	flags := map[string]bool{}
	model := ""
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch k {
			case "model name", "Model", "cpu model":
				if model == "" {
					model = v
				}
			case "flags", "Features":
				if len(flags) == 0 {
					have := map[string]bool{}
					for _, f := range strings.Fields(v) {
						have[f] = true
					}
					for _, f := range reportedFlags {
						flags[f] = have[f]
					}
					if runtime.GOARCH == "arm64" {
						flags["aes"] = have["aes"]
					}
				}
			}
		}
	}
	if len(flags) == 0 {
		flags["aes"] = cpu.X86.HasAES || cpu.ARM64.HasAES
		flags["pclmulqdq"] = cpu.X86.HasPCLMULQDQ
		flags["avx2"] = cpu.X86.HasAVX2
		flags["avx512f"] = cpu.X86.HasAVX512F
	}
	if model == "" {
		model = "unknown " + runtime.GOARCH
	}
	return model, flags
}

// gitCommit returns the VCS revision stamped into the binary, or asks git
// in the working directory (go run does not stamp one).
func gitCommit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			if dirty {
				rev += "+dirty"
			}
			return rev
		}
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
