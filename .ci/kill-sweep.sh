#!/usr/bin/env bash
# The long sweeps of reshard's crash safety (docs/reshard.md, "Crash
# safety, tested"): every power cut with every second cut during the
# finishing run, more directories and seeds (shrink, grow, spilled maps),
# faults at every step, and many SIGKILLs of the real binary. Opt-in: it
# takes a while.
set -euo pipefail
cd "$(dirname "$0")/.."
export FUSEE_LONG=1
go test -count=1 -timeout 2h -v -run 'TestKilledAndResumed|TestSignalStopsCleanly' ./cmd/fusee | grep -E '^(---|ok|FAIL|\s+kill_test)'
go test -count=1 -timeout 2h -v -run 'TestCrashAtEveryStep|TestFaultAtEveryStep|TestLeftovers|TestFullDisk' ./reshard | grep -E '^(---|ok|FAIL|\s+(crash|fault|leftover)_test)'
