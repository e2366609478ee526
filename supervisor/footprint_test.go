package supervisor_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// A serving tree costs its Serve's goroutine, which runs the root, and a
// goroutine per child, which runs the child's restart loop and its
// service; no child has a supervisor of its own. ServeInline runs a
// tree's only child on the caller's goroutine. The tree's goroutines are
// told from any other by a profiler label, which every goroutine it
// starts inherits: a goroutine of an earlier case or test that exits
// meanwhile does not change the count. Not parallel: it reads the
// process's goroutine profile.
func TestTreeGoroutines(t *testing.T) {
	for _, tt := range []struct {
		name     string
		children int
		inline   bool
		want     int
	}{
		{name: "one child", children: 1, want: 2},
		{name: "three children", children: 3, want: 1 + 3},
		{name: "inline", children: 1, inline: true, want: 1},
	} {
		tree := supervisor.NewTree("footprint", supervisor.Events{})
		started := make(chan struct{}, tt.children)
		for i := range tt.children {
			child := &fn{name: string(rune('a' + i)), serve: func(ctx context.Context, _ int) error {
				started <- struct{}{}
				<-ctx.Done()
				return ctx.Err()
			}}
			if err := tree.Add(child.name, child, supervisor.Policy{}); err != nil {
				t.Fatal(err)
			}
		}
		serveFn := serve
		if tt.inline {
			serveFn = serveInline
		}
		// Only the goroutine serve starts takes the label from this one.
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("footprint", tt.name)))
		stop := serveFn(t, tree)
		pprof.SetGoroutineLabels(context.Background())
		for range tt.children {
			<-started
		}
		// The count settles: a goroutine the start needed for a moment
		// may not have exited yet; one the tree keeps would never let it.
		got := labelled("footprint", tt.name)
		natstest.Eventually(t, 10*time.Second, func() bool { got = labelled("footprint", tt.name); return got == tt.want },
			func() string { return fmt.Sprintf("%s: %d goroutines, want %d", tt.name, got, tt.want) })
		_ = stop()
	}
}

// labelled counts the goroutines whose profiler label key is value.
func labelled(key, value string) int {
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		return -1
	}
	// Records of the debug=1 form: "<count> @ <pcs>", then "# labels: {...}"
	// for labelled goroutines, then their frames.
	want := strconv.Quote(key) + ":" + strconv.Quote(value)
	n, count := 0, 0
	sc := bufio.NewScanner(&b)
	for sc.Scan() {
		line := sc.Text()
		if c, _, ok := strings.Cut(line, " @ "); ok {
			count, _ = strconv.Atoi(c)
		}
		if strings.HasPrefix(line, "# labels: ") && strings.Contains(line, want) {
			n += count
		}
	}
	return n
}
