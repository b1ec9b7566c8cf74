package sim

import (
	"strconv"
	"strings"
)

// params are a run's input: everything its script and the scripted outside
// world derive from, carried in the Start record's payload so that a
// directory alone (no seed flag) is enough to drive it on. They hold
// logical values only — never a run or shard number.
type params struct {
	seed    uint64 // the workload seed
	idx     int    // index of the top-level workflow in the workload (targets of sends)
	can     int    // continue-as-new steps left in the chain
	rst     int    // restarts left once the run finishes
	long    bool   // long waits: still unfinished when gen stops
	noReset bool   // the run is a reset; never reset again
}

func (p params) encode() []byte {
	b := make([]byte, 0, 48)
	b = append(b, "s="...)
	b = strconv.AppendUint(b, p.seed, 10)
	b = append(b, ";i="...)
	b = strconv.AppendInt(b, int64(p.idx), 10)
	b = append(b, ";c="...)
	b = strconv.AppendInt(b, int64(p.can), 10)
	b = append(b, ";r="...)
	b = strconv.AppendInt(b, int64(p.rst), 10)
	if p.long {
		b = append(b, ";l"...)
	}
	if p.noReset {
		b = append(b, ";n"...)
	}
	return b
}

// parseParams reads an input written by encode. A run whose input is not
// ours (a directory written by something else) gets zero params: its
// script still runs, deterministically, from seed 0.
func parseParams(in []byte) params {
	var p params
	for _, f := range strings.Split(string(in), ";") {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "s":
			p.seed, _ = strconv.ParseUint(v, 10, 64)
		case "i":
			p.idx, _ = strconv.Atoi(v)
		case "c":
			p.can, _ = strconv.Atoi(v)
		case "r":
			p.rst, _ = strconv.Atoi(v)
		case "l":
			p.long = true
		case "n":
			p.noReset = true
		}
	}
	return p
}
