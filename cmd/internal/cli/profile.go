package cli

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// addProfileFlags adds --cpuprofile and --memprofile to cmd, for an
// operator reporting a slow run of what (a noun: "the reshard").
func addProfileFlags(cmd *cobra.Command, cpu, mem *string, what string) {
	cmd.Flags().StringVar(cpu, "cpuprofile", "", "write a CPU profile (pprof) of "+what+" to `FILE`")
	cmd.Flags().StringVar(mem, "memprofile", "", "write a heap profile (pprof, allocations included) taken at the end to `FILE`")
}

// startProfiles starts a CPU profile into cpuPath and arranges a heap
// profile into memPath (either may be ""); the returned function stops
// the CPU profile and writes the heap profile. The files are diagnostics,
// not data: they are written plainly, without fsync.
func startProfiles(cpuPath, memPath string) (stop func() error, err error) {
	var cpu *os.File
	if cpuPath != "" {
		if cpu, err = os.Create(cpuPath); err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, fmt.Errorf("--cpuprofile %s: %w", cpuPath, err)
		}
	}
	return func() error {
		var first error
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
