package cli

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"

	"github.com/spf13/cobra"
)

// profileFlags are --cpuprofile, --memprofile and --trace of a
// long-running command (what names what is profiled: "the reshard", "the gen").
type profileFlags struct{ cpu, mem, trace string }

func (p *profileFlags) add(cmd *cobra.Command, what string) {
	f := cmd.Flags()
	f.StringVar(&p.cpu, "cpuprofile", "", "write a CPU profile (pprof) of "+what+" to `FILE`")
	f.StringVar(&p.mem, "memprofile", "", "write a heap profile (pprof, allocations included) taken at the end to `FILE`")
	f.StringVar(&p.trace, "trace", "", "write a Go execution trace of "+what+" to `FILE` (go tool trace FILE: which goroutine ran on which core, and when)")
}

// start is startProfiles of the flags' files.
func (p *profileFlags) start() (stop func() error, err error) {
	return startProfiles(p.cpu, p.mem, p.trace)
}

// startProfiles starts a CPU profile into cpuPath and an execution
// trace into tracePath, and arranges a heap profile into memPath (any
// may be ""); the returned function stops the CPU profile and the trace
// and writes the heap profile. The files are diagnostics, not data: they
// are written plainly, without fsync.
func startProfiles(cpuPath, memPath, tracePath string) (stop func() error, err error) {
	var cpu, tr *os.File
	stopTrace := func() { // on a failure before the profiles run
		if tr != nil {
			trace.Stop()
			tr.Close()
		}
	}
	if tracePath != "" {
		if tr, err = os.Create(tracePath); err != nil {
			return nil, fmt.Errorf("--trace: %w", err)
		}
		if err := trace.Start(tr); err != nil {
			tr.Close()
			return nil, fmt.Errorf("--trace %s: %w", tracePath, err)
		}
	}
	if cpuPath != "" {
		if cpu, err = os.Create(cpuPath); err != nil {
			stopTrace()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			stopTrace()
			return nil, fmt.Errorf("--cpuprofile %s: %w", cpuPath, err)
		}
	}
	return func() error {
		var first error
		if tr != nil {
			trace.Stop()
			if err := tr.Close(); err != nil {
				first = fmt.Errorf("--trace %s: %w", tracePath, err)
			}
		}
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				first = fmt.Errorf("--cpuprofile %s: %w", cpuPath, err)
			}
		}
		if memPath != "" {
			runtime.GC() // the heap profile shows live data as of the last GC
			f, err := os.Create(memPath)
			if err == nil {
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil && first == nil {
				first = fmt.Errorf("--memprofile %s: %w", memPath, err)
			}
		}
		return first
	}, nil
}
