package leakcheck

import (
	"runtime"
	"slices"
	"strings"
)

// goroutine is one goroutine of a runtime.Stack listing.
type goroutine struct {
	id    string   // "7"
	state string   // "chan receive", "select, 2 minutes"
	top   string   // the function on top of the stack, fully qualified
	funcs []string // every function on the stack, not its creator
	stack string   // the frames as runtime.Stack printed them
}

// ignored reports whether g is the testing package's, the standard
// library's or the runtime's, or has one of ignoreTop on top; these are
// goleak's default filters and its IgnoreTopFunction.
func (g goroutine) ignored(ignoreTop []string) bool {
	return slices.Contains(ignoreTop, g.top) ||
		testRunner(g.top) && strings.HasPrefix(g.state, "chan receive") ||
		g.top == "os/signal.signal_recv" || g.top == "os/signal.loop" || // signal.Notify's loop
		slices.ContainsFunc(g.funcs, sigM) || // signal.Notify's signal mask thread
		slices.Contains(g.funcs, "runtime.ReadTrace") || // the execution tracer's reader
		strings.HasPrefix(g.state, "syscall") && slices.Contains(g.funcs, "runtime.goexit") // cgo's
}

// sigM reports whether f is runtime.ensureSigM or its goroutine's
// function. runtime.Stack counts that goroutine among the runtime's own,
// which it does not list; goleak's rule for it is kept for a runtime that
// lists it.
func sigM(f string) bool { return strings.HasPrefix(f, "runtime.ensureSigM") }

// testRunner reports whether top is a function in which the testing
// package's own goroutines wait, in a channel receive, while tests run.
func testRunner(top string) bool {
	switch top {
	case "testing.RunTests", "testing.(*T).Run", "testing.(*T).Parallel", "testing.runFuzzing", "testing.runFuzzTests":
		return true
	}
	return false
}

// goroutines returns every goroutine, the caller's first.
func goroutines() []goroutine {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return parse(string(buf[:n]))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// parse reads a runtime.Stack listing: for each goroutine a header line
// ("goroutine 7 [chan receive]:"), then for each frame a function line
// and an indented position line, ending with the "created by" line of
// the goroutine that started it; a blank line between goroutines.
func parse(listing string) []goroutine {
	var all []goroutine
	for record := range strings.SplitSeq(strings.TrimSpace(listing), "\n\n") {
		header, frames, _ := strings.Cut(record, "\n")
		id, state, ok := parseHeader(header)
		if !ok {
			continue
		}
		g := goroutine{id: id, state: state, stack: frames + "\n"}
		for line := range strings.SplitSeq(frames, "\n") {
			if strings.HasPrefix(line, "created by ") {
				break // its creator's frame; with GODEBUG=tracebackancestors, its ancestors follow
			}
			i := strings.LastIndexByte(line, '(')
			if i <= 0 || strings.HasPrefix(line, "\t") {
				continue // a position, or "...additional frames elided..."
			}
			g.funcs = append(g.funcs, line[:i])
		}
		if len(g.funcs) > 0 {
			g.top = g.funcs[0]
		}
		all = append(all, g)
	}
	return all
}

// parseHeader reads "goroutine 7 [chan receive, 2 minutes]:".
func parseHeader(line string) (id, state string, ok bool) {
	rest, ok := strings.CutPrefix(line, "goroutine ")
	if !ok {
		return "", "", false
	}
	id, rest, _ = strings.Cut(rest, " ")
	open, end := strings.IndexByte(rest, '['), strings.LastIndexByte(rest, ']')
	if id == "" || open < 0 || end < open {
		return "", "", false
	}
	return id, rest[open+1 : end], true
}
