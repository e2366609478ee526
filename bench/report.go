package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// num prints a figure compactly: whole numbers from 100 up, else three
// significant digits.
func num(v float64) string {
	switch {
	case math.IsInf(v, 0) || math.IsNaN(v):
		return "inf"
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// line is the scenario's report line.
func (r *result) line() string {
	raw, cor := r.Impl[implRaw], r.Impl[implCorral]
	wm, hasWM := r.Impl[implWatermill]
	var b strings.Builder
	fmt.Fprintf(&b, "bench: scenario=%s raw=%s corral=%s", r.Scenario, num(raw.Median), num(cor.Median))
	if hasWM {
		fmt.Fprintf(&b, " watermill=%s", num(wm.Median))
	} else {
		b.WriteString(" watermill=-")
	}
	if r.CountGoal > 0 {
		fmt.Fprintf(&b, " unit=%s ratio=- over_raw=%s goal=%d", r.Unit, num(r.CountOverRaw), r.CountGoal)
	} else {
		fmt.Fprintf(&b, " unit=%s ratio=%s", r.Unit, num(r.Ratio))
	}
	if hasWM {
		fmt.Fprintf(&b, " ratio_watermill=%s", num(r.RatioWatermill))
	} else {
		b.WriteString(" ratio_watermill=-")
	}
	if r.latency && len(cor.P99us) > 0 {
		fmt.Fprintf(&b, " p99_us=%s", num(median(cor.P99us)))
	} else {
		b.WriteString(" p99_us=-")
	}
	if len(cor.AllocsPer) > 0 {
		fmt.Fprintf(&b, " allocs_per_msg=%s", num(median(cor.AllocsPer)))
	} else {
		b.WriteString(" allocs_per_msg=-")
	}
	// Beyond the fixed fields: the same figures for the baselines, the
	// peak heap, and the scenario's own extras.
	if r.latency && len(raw.P99us) > 0 {
		fmt.Fprintf(&b, " p50_us=%s p50_us_raw=%s p99_us_raw=%s", num(median(cor.P50us)), num(median(raw.P50us)), num(median(raw.P99us)))
		if hasWM && len(wm.P99us) > 0 {
			fmt.Fprintf(&b, " p99_us_watermill=%s", num(median(wm.P99us)))
		}
	}
	if len(raw.AllocsPer) > 0 {
		fmt.Fprintf(&b, " allocs_raw=%s", num(median(raw.AllocsPer)))
	}
	if hasWM && len(wm.AllocsPer) > 0 {
		fmt.Fprintf(&b, " allocs_watermill=%s", num(median(wm.AllocsPer)))
	}
	// CPU time of the whole process (server included) per message: less
	// sensitive than the rates to other load on the machine.
	if len(cor.CPUPer) > 0 && len(raw.CPUPer) > 0 {
		fmt.Fprintf(&b, " cpu_us_per_msg=%s cpu_us_per_msg_raw=%s", num(median(cor.CPUPer)), num(median(raw.CPUPer)))
		if hasWM && len(wm.CPUPer) > 0 {
			fmt.Fprintf(&b, " cpu_us_per_msg_watermill=%s", num(median(wm.CPUPer)))
		}
	}
	if median(cor.PeakHeapMB) > 0 { // not sampled in scenarios measuring the process at rest
		fmt.Fprintf(&b, " peak_heap_mb=%s peak_heap_mb_raw=%s", num(median(cor.PeakHeapMB)), num(median(raw.PeakHeapMB)))
		if hasWM {
			fmt.Fprintf(&b, " peak_heap_mb_watermill=%s", num(median(wm.PeakHeapMB)))
		}
	}
	for _, name := range []string{implRaw, implCorral, implWatermill} {
		ir, ok := r.Impl[name]
		if !ok {
			continue
		}
		keys := make([]string, 0, len(ir.Extra))
		for k := range ir.Extra {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s_%s=%s", k, name, num(median(ir.Extra[k])))
		}
	}
	stalls := 0
	for _, ir := range r.Impl {
		stalls += len(ir.Stalls)
	}
	fmt.Fprintf(&b, " rounds=%d n=%d stalls=%d", r.Rounds, r.N, stalls)
	return b.String()
}
