package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	// noSample turns the heap sampler off, for scenarios that measure
	// the process at rest.
	noSample  bool
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

	latency bool
}

const (
	implRaw       = "raw"
	implCorral    = "corral"
	implWatermill = "watermill"
)

func (e *env) runScenario(ctx context.Context, s scenario) (*result, error) {
	n, rounds := s.fullN, 9
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
	timeout := s.roundTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	type impl struct {
		name string
		run  runFunc
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
		for _, im := range impls {
			wctx, cancel := context.WithTimeout(ctx, timeout)
			_, err := im.run(wctx, e, max(n/5, 1))
			cancel()
			if err != nil {
				return nil, fmt.Errorf("warm-up %s: %w", im.name, err)
			}
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
			ir := r.Impl[im.name]
			e.profileName = ""
			if e.profileDir != "" && round == rounds-1 {
				e.profileName = s.name + "-" + im.name
			}
			smp, m, err := measure(ctx, e, im.run, n, timeout, !s.noSample)
			if err != nil {
				if ctx.Err() == nil && isTimeout(err) {
					// A round that never finished is the worst stall.
					ir.TimedOut++
					smp = sample{value: worst(s.lower)}
				} else {
					return nil, fmt.Errorf("%s round %d: %w", im.name, round, err)
				}
			}
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
	}
	for name, ir := range r.Impl {
		ir.Median = median(ir.Values)
		for i, v := range ir.Values {
			if stalled(v, ir.Median, s.lower) {
				ir.Stalls = append(ir.Stalls, i)
				fmt.Fprintf(e.out, "bench: stall scenario=%s impl=%s round=%d value=%s median=%s\n",
					s.name, name, i, num(v), num(ir.Median))
			}
		}
	}
	r.PairRatios = pairRatios(r.Impl[implCorral].Values, r.Impl[implRaw].Values, s.lower)
	r.Ratio = median(r.PairRatios)
	if wm, ok := r.Impl[implWatermill]; ok {
		r.PairRatiosWM = pairRatios(r.Impl[implCorral].Values, wm.Values, s.lower)
		r.RatioWatermill = median(r.PairRatiosWM)
	}
	return r, nil
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

// stalled: a round slower than 0.3x the median points at a pull or
// heartbeat problem; it is reported, not averaged away.
func stalled(v, med float64, lower bool) bool {
	if lower {
		return med > 0 && v > med/0.3
	}
	return v < 0.3*med
}

// pairRatios is corral against other round by round: how many times
// better Corral is, > 1 always good.
func pairRatios(corral, other []float64, lower bool) []float64 {
	out := make([]float64, 0, len(corral))
	for i := range min(len(corral), len(other)) {
		c, o := corral[i], other[i]
		switch {
		case lower && c > 0:
			out = append(out, o/c)
		case !lower && o > 0:
			out = append(out, c/o)
		case lower: // Corral took no time at all
			out = append(out, math.Inf(1))
		default:
			out = append(out, 0)
		}
	}
	return out
}

type memResult struct {
	allocs   float64 // heap objects allocated during the round
	peakHeap float64 // bytes of live heap objects, sampled every 5ms
	cpu      time.Duration
}

var (
	allocsMetric = "/gc/heap/allocs:objects"
	heapMetric   = "/memory/classes/heap/objects:bytes"
)

// meter counts the heap objects allocated and samples the live heap
// during a round, from its start or from the round's call to
// env.startClock, which leaves setup (filling a stream) out. Everything in
// the process counts, including the in-process server, which every
// implementation shares.
type meter struct {
	mu       sync.Mutex
	baseline uint64
	end      uint64 // the counter at stopClock; 0 until then
	peak     uint64
	stopped  bool
	cpu0     time.Duration // process CPU time at the start
	cpu      time.Duration // process CPU time of the measured part
}

func readMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func (m *meter) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.baseline = readMetric(allocsMetric)
	m.peak = 0
	m.cpu0 = cpuTime()
}

func (m *meter) sample() {
	h := readMetric(heapMetric)
	m.mu.Lock()
	if !m.stopped {
		m.peak = max(m.peak, h)
	}
	m.mu.Unlock()
}

func (m *meter) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.stopped {
		m.end, m.stopped = readMetric(allocsMetric), true
		m.cpu = cpuTime() - m.cpu0
	}
}

// startClock is called by a round when its measured part starts, and
// stopClock when it ends, before clean-up; without them the whole round
// is measured.
func (e *env) startClock() {
	if e.meter != nil {
		e.meter.reset()
	}
	if e.profile != nil {
		// Profile the measured part only: start the file again.
		pprof.StopCPUProfile()
		_ = e.profile.Truncate(0)
		_, _ = e.profile.Seek(0, 0)
		_ = pprof.StartCPUProfile(e.profile)
	}
}

func (e *env) stopClock() {
	if e.meter != nil {
		e.meter.stop()
	}
	if e.profile != nil {
		pprof.StopCPUProfile()
		_ = e.profile.Close()
		e.profile = nil
	}
}

// measure runs one round, sampling the live heap every 5ms.
func measure(ctx context.Context, e *env, run runFunc, n int, timeout time.Duration, sampling bool) (sample, memResult, error) {
	runtime.GC()
	m := &meter{}
	m.reset()
	e.meter = m
	defer func() { e.meter = nil }()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if e.profileName != "" {
		f, err := os.Create(filepath.Join(e.profileDir, e.profileName+".cpu.pprof"))
		if err != nil {
			return sample{}, memResult{}, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
			return sample{}, memResult{}, err
		}
		e.profile = f
		defer e.stopClock()
	}
	wg.Go(func() {
		if !sampling {
			<-stop
			return
		}
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			m.sample()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	rctx, cancel := context.WithTimeout(ctx, timeout)
	smp, err := run(rctx, e, n)
	cancel()
	m.stop()
	close(stop)
	wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	return smp, memResult{allocs: float64(m.end - m.baseline), peakHeap: float64(m.peak), cpu: m.cpu}, err
}

func percentiles(lat []time.Duration) (p50, p99 float64) {
	s := slices.Clone(lat)
	slices.Sort(s)
	at := func(q float64) float64 {
		i := min(int(q*float64(len(s))), len(s)-1)
		return float64(s[i]) / float64(time.Microsecond)
	}
	return at(0.50), at(0.99)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

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
	fmt.Fprintf(&b, " unit=%s ratio=%s", r.Unit, num(r.Ratio))
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
