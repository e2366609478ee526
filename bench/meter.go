package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"
)

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
	// heapPath, when set, receives a heap profile each time the peak
	// grows by a quarter: what is live near the peak (as of the last GC,
	// as heap profiles are).
	heapPath string
	written  uint64 // the peak when the profile was last written
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
	write := false
	if !m.stopped {
		m.peak = max(m.peak, h)
		if m.heapPath != "" && m.peak > m.written+m.written/4 {
			m.written, write = m.peak, true
		}
	}
	path := m.heapPath
	m.mu.Unlock()
	if write {
		if f, err := os.Create(path); err == nil {
			_ = pprof.Lookup("heap").WriteTo(f, 0)
			_ = f.Close()
		}
	}
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
		m.heapPath = filepath.Join(e.profileDir, e.profileName+".heap.pprof")
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

// cpuTime is the CPU time, user and system, the whole process has used:
// every goroutine's, the in-process server's included.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
