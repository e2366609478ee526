// Command bench runs Corral side by side with raw nats.go and Watermill on
// one in-process nats-server, scenario by scenario, the implementations
// alternating round by round, and prints one line per scenario with the
// medians and the median of the pairwise ratios:
//
//	cd bench && go run . -quick           # about two minutes: fewer rounds, no fixed waits
//	cd bench && go run .                  # more rounds and messages, stable figures
//	cd bench && go run . -scenario core-noop,js-publish-sync -json out.json
//	cd bench && go run . -markdown out.json   # the README's tables
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"time"
)

func main() {
	os.Exit(run())
}

func run() int {
	quick := flag.Bool("quick", false, "fewer rounds and messages, and no scenario bound by fixed waits: about two minutes")
	only := flag.String("scenario", "", "comma-separated scenario names to run (default all); -list shows them")
	list := flag.Bool("list", false, "list the scenarios and exit")
	jsonOut := flag.String("json", "", "write the raw results (every round) to this file")
	rounds := flag.Int("rounds", 0, "rounds per implementation (default 5 with -quick, 9 without; some scenarios run fewer)")
	profile := flag.String("profile", "", "write a CPU profile of each implementation's last round, a heap profile near its peak, and the idle goroutines, to this directory")
	markdown := flag.String("markdown", "", "print the README's tables from a run's -json file and exit")
	psEvery := flag.Duration("ps-every", 0, "ask every Corral process of the run for its status (as `corral ps` does) this often, in the background: what discovery costs")
	flag.Parse()
	if *markdown != "" {
		if err := writeMarkdown(os.Stdout, *markdown); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		return 0
	}

	all := scenarios()
	if *list {
		for _, s := range all {
			fmt.Printf("%-22s %s\n", s.name, s.about)
		}
		return 0
	}
	selected, err := selectScenarios(all, *only, *quick)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	dir, err := os.MkdirTemp("", "corral-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	srv, err := startServer(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer srv.Shutdown()

	mode := "full"
	if *quick {
		mode = "quick"
	}
	fmt.Printf("bench: start mode=%s go=%s gomaxprocs=%d cpus=%d server=%s\n",
		mode, runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU(), srv.URL())
	started := time.Now()
	env := &env{srv: srv, quick: *quick, rounds: *rounds, out: os.Stdout, profileDir: *profile, storeDir: dir}
	defer func() {
		if env.sharedCluster != nil {
			env.sharedCluster.Shutdown()
		}
	}()
	if *profile != "" {
		if err := os.MkdirAll(*profile, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
	}
	if *psEvery > 0 {
		stopPS, err := askFleet(ctx, srv.URL(), *psEvery)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		defer func() {
			asked, answers := stopPS()
			fmt.Printf("bench: ps every=%s asked=%d answers=%d\n", *psEvery, asked, answers)
		}()
	}
	results, failed := env.runAll(ctx, selected)
	lowest := "-" // no ratio scenario ran
	if m := minRatio(results); !math.IsInf(m, 1) {
		lowest = num(m)
	}
	fmt.Printf("bench: done scenarios=%d min_ratio=%s wall=%s\n", len(results), lowest, time.Since(started).Round(time.Second))
	if *jsonOut != "" {
		if err := writeJSON(*jsonOut, mode, time.Since(started), results); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
	}
	if failed > 0 || ctx.Err() != nil {
		return 1
	}
	return 0
}

// runAll runs the selected scenarios one after another, printing each
// one's line as it ends; a scenario that fails is counted and reported,
// and the others still run.
func (e *env) runAll(ctx context.Context, selected []scenario) (results []*result, failed int) {
	for _, s := range selected {
		if ctx.Err() != nil {
			break
		}
		if s.skip != "" {
			fmt.Fprintf(e.out, "bench: scenario=%s skipped reason=%q\n", s.name, s.skip)
			continue
		}
		r, err := e.runScenario(ctx, s)
		if err != nil {
			failed++
			fmt.Fprintf(e.out, "bench: scenario=%s error=%q\n", s.name, err.Error())
			continue
		}
		results = append(results, r)
		fmt.Fprintln(e.out, r.line())
	}
	return results, failed
}

// minRatio is the lowest Corral/raw ratio of the ratio scenarios: the
// one where Corral is furthest behind. Count scenarios have goals of
// their own.
func minRatio(results []*result) float64 {
	lowest := math.Inf(1)
	for _, r := range results {
		if r.CountGoal == 0 && r.Ratio < lowest {
			lowest = r.Ratio
		}
	}
	return lowest
}

// selectScenarios is the scenarios named in only, or by default every one
// but the diagnostics (and, with quick, those bound by fixed waits).
func selectScenarios(all []scenario, only string, quick bool) ([]scenario, error) {
	if only == "" {
		var out []scenario
		for _, s := range all {
			if !s.diagnostic && !(quick && s.fullOnly) {
				out = append(out, s)
			}
		}
		return out, nil
	}
	var out []scenario
	for _, name := range strings.Split(only, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, s := range all {
			if s.name == name {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown scenario %q (-list shows them)", name)
		}
	}
	return out, nil
}

func writeJSON(path, mode string, wall time.Duration, results []*result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	err = enc.Encode(struct {
		Mode       string    `json:"mode"`
		Go         string    `json:"go"`
		GOMAXPROCS int       `json:"gomaxprocs"`
		WallSecs   float64   `json:"wall_seconds"`
		Results    []*result `json:"results"`
	}{mode, runtime.Version(), runtime.GOMAXPROCS(0), wall.Seconds(), results})
	return errors.Join(err, f.Close())
}

// env is what every round gets: the server and the run's mode.
type env struct {
	srv *natsServer
	// cluster, while a scenario runs on the three-node cluster, and the
	// replicas its streams get; sharedCluster is started by the first
	// such round and kept for the run, under storeDir.
	cluster       *natsCluster
	replicas      int
	sharedCluster *natsCluster
	storeDir      string
	quick         bool
	rounds        int
	out           io.Writer
	meter         *meter // the round's, while one runs
	// profileDir, when set, receives CPU profiles and goroutine dumps.
	profileDir string
	// profileName names the round's profiles, when it is to be profiled.
	profileName string
	profile     *os.File // the CPU profile being written
}
