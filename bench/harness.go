package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// scenario is one comparison: a raw nats.go baseline, Corral, and
// Watermill where it has an equivalent, each run for several rounds,
// alternately.
type scenario struct {
	name  string
	about string
	unit  string
	// lower: lower values are better (time, goroutines); the ratio is
	// still "how many times better Corral is", raw/corral.
	lower bool
	// latency: the scenario is latency-bound; p50/p99 are reported.
	latency bool
	// quickN and fullN are the messages (or operations) per round.
	quickN, fullN int
	// quickRounds and fullRounds override the run's default rounds.
	quickRounds, fullRounds int
	// warmup runs each implementation once, unrecorded, with n/5.
	warmup bool
	// roundTimeout bounds one round; past it the round is a stall.
	roundTimeout time.Duration
	// diagnostic scenarios run only when named with -scenario.
	diagnostic bool
	// fullOnly scenarios are bound by fixed waits (an ack wait, a window
	// of minutes), not by what they measure: -quick leaves them out
	// unless named with -scenario.
	fullOnly bool
	// noSample turns the heap sampler off, for scenarios that measure
	// the process at rest.
	noSample bool
	// countGoal makes the scenario a count, not a ratio: Corral's median
	// over raw's is reported against it (at most countGoal), and the
	// scenario stays out of min_ratio.
	countGoal int
	skip      string
	raw       runFunc
	corral    runFunc
	watermill runFunc
}

// runFunc runs one round of n messages and reports its sample.
type runFunc func(ctx context.Context, e *env, n int) (sample, error)

// sample is what one round of one implementation measured.
type sample struct {
	// value is the scenario's metric (msgs/s, ms, ...).
	value float64
	// msgs is what allocations are divided by; 0: not reported.
	msgs int
	// lat is per-message latency, for latency-bound scenarios.
	lat []time.Duration
	// extra are further metrics, reported as medians.
	extra map[string]float64
}

// implResult is every round of one implementation.
type implResult struct {
	Values      []float64            `json:"values"`
	Median      float64              `json:"median"`
	AllocsPer   []float64            `json:"allocs_per_msg,omitempty"`
	CPUPer      []float64            `json:"cpu_us_per_msg,omitempty"`
	PeakHeapMB  []float64            `json:"peak_heap_mb"`
	P50us       []float64            `json:"p50_us,omitempty"`
	P99us       []float64            `json:"p99_us,omitempty"`
	Extra       map[string][]float64 `json:"extra,omitempty"`
	Stalls      []int                `json:"stalls,omitempty"` // rounds slower than 0.3x the median
	TimedOut    int                  `json:"timed_out,omitempty"`
	implemented bool
}

type result struct {
	Scenario       string                 `json:"scenario"`
	Unit           string                 `json:"unit"`
	LowerIsBetter  bool                   `json:"lower_is_better"`
	N              int                    `json:"n"`
	Rounds         int                    `json:"rounds"`
	Impl           map[string]*implResult `json:"impl"`
	Ratio          float64                `json:"ratio"`
	RatioWatermill float64                `json:"ratio_watermill,omitempty"`
	PairRatios     []float64              `json:"pair_ratios"`
	PairRatiosWM   []float64              `json:"pair_ratios_watermill,omitempty"`
	// CountOverRaw and CountGoal are set for a count scenario.
	CountOverRaw float64 `json:"count_over_raw,omitempty"`
	CountGoal    int     `json:"count_goal,omitempty"`

	latency bool
}

const (
	implRaw       = "raw"
	implCorral    = "corral"
	implWatermill = "watermill"
)

// impl is one implementation of a scenario, by name.
type impl struct {
	name string
	run  runFunc
}

// runScenario runs s round after round, the implementations alternating,
// then takes the medians and the pairwise ratios.
func (e *env) runScenario(ctx context.Context, s scenario) (*result, error) {
	n, rounds := e.size(s)
	timeout := s.roundTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	impls := []impl{{implRaw, s.raw}, {implCorral, s.corral}}
	if s.watermill != nil {
		impls = append(impls, impl{implWatermill, s.watermill})
	}
	r := &result{Scenario: s.name, Unit: s.unit, LowerIsBetter: s.lower, N: n, Rounds: rounds,
		Impl: map[string]*implResult{}, latency: s.latency}
	for _, im := range impls {
		r.Impl[im.name] = &implResult{implemented: true, Extra: map[string][]float64{}}
	}
	if s.warmup {
		if err := e.warmUp(ctx, impls, max(n/5, 1), timeout); err != nil {
			return nil, err
		}
	}
	for round := range rounds {
		// A B C, then C B A: neither goes first every time.
		order := slices.Clone(impls)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, im := range order {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			e.profileName = ""
			if e.profileDir != "" && round == rounds-1 {
				e.profileName = s.name + "-" + im.name
			}
			smp, m, err := measure(ctx, e, im.run, n, timeout, !s.noSample)
			ir := r.Impl[im.name]
			if err != nil {
				if ctx.Err() != nil || !isTimeout(err) {
					return nil, fmt.Errorf("%s round %d: %w", im.name, round, err)
				}
				// A round that never finished is the worst stall.
				ir.TimedOut++
				smp = sample{value: worst(s.lower)}
			}
			ir.record(smp, m)
		}
	}
	r.summarize(e.out, s.lower)
	if s.countGoal > 0 {
		r.CountGoal = s.countGoal
		r.CountOverRaw = r.Impl[implCorral].Median - r.Impl[implRaw].Median
	}
	return r, nil
}

// size is the messages per round and the rounds of s in this run's mode.
func (e *env) size(s scenario) (n, rounds int) {
	n, rounds = s.fullN, 9
	if s.fullRounds > 0 {
		rounds = s.fullRounds
	}
	if e.quick {
		n, rounds = s.quickN, 5
		if s.quickRounds > 0 {
			rounds = s.quickRounds
		}
	}
	if e.rounds > 0 {
		rounds = e.rounds
	}
	return n, rounds
}

// warmUp runs each implementation once with n, unrecorded, so that no
// implementation's first round pays for the process's cold start.
func (e *env) warmUp(ctx context.Context, impls []impl, n int, timeout time.Duration) error {
	for _, im := range impls {
		wctx, cancel := context.WithTimeout(ctx, timeout)
		_, err := im.run(wctx, e, n)
		cancel()
		if err != nil {
			return fmt.Errorf("warm-up %s: %w", im.name, err)
		}
	}
	return nil
}

// record adds one round: its value, what the meter saw, and its
// latencies and extras.
func (ir *implResult) record(smp sample, m memResult) {
	ir.Values = append(ir.Values, smp.value)
	ir.PeakHeapMB = append(ir.PeakHeapMB, m.peakHeap/(1<<20))
	if smp.msgs > 0 {
		ir.AllocsPer = append(ir.AllocsPer, m.allocs/float64(smp.msgs))
		ir.CPUPer = append(ir.CPUPer, float64(m.cpu)/float64(time.Microsecond)/float64(smp.msgs))
	}
	if len(smp.lat) > 0 {
		p50, p99 := percentiles(smp.lat)
		ir.P50us = append(ir.P50us, p50)
		ir.P99us = append(ir.P99us, p99)
	}
	for k, v := range smp.extra {
		ir.Extra[k] = append(ir.Extra[k], v)
	}
}

// summarize takes each implementation's median, prints a line for every
// stalled round, and takes the ratios of Corral to the others.
func (r *result) summarize(out io.Writer, lower bool) {
	for name, ir := range r.Impl {
		ir.Median = median(ir.Values)
		for i, v := range ir.Values {
			if stalled(v, ir.Median, lower) {
				ir.Stalls = append(ir.Stalls, i)
				fmt.Fprintf(out, "bench: stall scenario=%s impl=%s round=%d value=%s median=%s\n",
					r.Scenario, name, i, num(v), num(ir.Median))
			}
		}
	}
	r.PairRatios = pairRatios(r.Impl[implCorral].Values, r.Impl[implRaw].Values, lower)
	r.Ratio = median(r.PairRatios)
	if wm, ok := r.Impl[implWatermill]; ok {
		r.PairRatiosWM = pairRatios(r.Impl[implCorral].Values, wm.Values, lower)
		r.RatioWatermill = median(r.PairRatiosWM)
	}
}

func isTimeout(err error) bool {
	return err == context.DeadlineExceeded || strings.Contains(err.Error(), context.DeadlineExceeded.Error())
}

func worst(lower bool) float64 {
	if lower {
		return math.Inf(1)
	}
	return 0
}
