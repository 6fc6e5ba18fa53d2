package lab

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
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
	// Runs say, per scenario, when it ran and how busy the machine was.
	Runs []ScenarioRun `json:"runs,omitempty"`
}

// ScenarioRun records one scenario's run: its duration, the 1-minute load
// average before and after, and the share of CPU time stolen by the
// hypervisor meanwhile (on virtual machines).
type ScenarioRun struct {
	Name         string    `json:"name"`
	Started      time.Time `json:"started"`
	Seconds      float64   `json:"seconds"`
	Load1Before  float64   `json:"load1_before"`
	Load1After   float64   `json:"load1_after"`
	StealPercent float64   `json:"steal_percent"`
}

// Busy reports whether the machine was busy during the run: a load average
// above the number of cores before it started, or more than 5% of CPU time
// stolen while it ran. (The load after includes the scenario's own work,
// so it is recorded but not judged.)
func (r ScenarioRun) Busy(cores int) bool {
	return r.Load1Before > float64(cores) || r.StealPercent > 5
}

// Load is a reading of the machine's load: the 1-minute load average and
// the CPU time counters of /proc/stat.
type Load struct {
	at                 time.Time
	load1              float64
	steal, idle, total uint64
}

// ReadLoad reads the load now (zeros where /proc is missing).
func ReadLoad() Load {
	l := Load{at: time.Now()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			l.load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		for i, f := range strings.Fields(line)[1:] {
			v, _ := strconv.ParseUint(f, 10, 64)
			if i < 8 { // user nice system idle iowait irq softirq steal; guest is inside user
				l.total += v
			}
			if i == 3 || i == 4 { // idle, iowait
				l.idle += v
			}
			if i == 7 {
				l.steal = v
			}
		}
	}
	return l
}

// BusySince is the share of the machine's CPU time spent busy (not idle
// or waiting for I/O) between before and l, from 0 to 1.
func (l Load) BusySince(before Load) float64 {
	if l.total <= before.total {
		return 0
	}
	return 1 - float64(l.idle-before.idle)/float64(l.total-before.total)
}

// Run describes a scenario that ran from before to after.
func Run(name string, before, after Load) ScenarioRun {
	r := ScenarioRun{Name: name, Started: before.at.UTC().Truncate(time.Second), Seconds: after.at.Sub(before.at).Seconds(),
		Load1Before: before.load1, Load1After: after.load1}
	if dt := after.total - before.total; after.total > before.total {
		r.StealPercent = 100 * float64(after.steal-before.steal) / float64(dt)
	}
	return r
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
