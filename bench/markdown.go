package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// The README's tables are printed from a run's JSON (-json), never typed:
//
//	cd bench && go run . -json out.json && go run . -markdown out.json

// runFile is what -json writes.
type runFile struct {
	Mode     string    `json:"mode"`
	Go       string    `json:"go"`
	WallSecs float64   `json:"wall_seconds"`
	Results  []*result `json:"results"`
}

// writeMarkdown prints the tables of the run in path: every scenario,
// then the growth and payload-size scenarios side by side.
func writeMarkdown(out io.Writer, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var run runFile
	if err := json.Unmarshal(data, &run); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	byName := map[string]*result{}
	for _, r := range run.Results {
		byName[r.Scenario] = r
	}
	fmt.Fprintf(out, "Mode %s, %s, wall time %.0f s.\n\n", run.Mode, run.Go, run.WallSecs)
	fmt.Fprintln(out, "| scenario | unit | raw | Corral | Watermill | Corral/raw | Corral/Watermill | goal | p99 µs Corral / raw | allocs/msg Corral / raw | CPU µs/msg Corral / raw | peak heap MB Corral / raw |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range run.Results {
		raw, cor := r.Impl[implRaw], r.Impl[implCorral]
		wm, hasWM := r.Impl[implWatermill]
		ratio := num(r.Ratio)
		if r.CountGoal > 0 {
			ratio = fmt.Sprintf("+%s (goal ≤ +%d)", num(r.CountOverRaw), r.CountGoal)
		}
		wmMedian, wmRatio := "–", "–"
		if hasWM {
			wmMedian, wmRatio = num(wm.Median), num(r.RatioWatermill)
		}
		goal := goals[r.Scenario]
		if goal == "" {
			goal = "–"
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Scenario, r.Unit,
			num(raw.Median), num(cor.Median), wmMedian, ratio, wmRatio, goal,
			pair(cor.P99us, raw.P99us), pair(cor.AllocsPer, raw.AllocsPer), pair(cor.CPUPer, raw.CPUPer),
			pair(cor.PeakHeapMB, raw.PeakHeapMB))
	}
	growth(out, byName)
	sizes(out, byName)
	return nil
}

// goals are the goals for Corral/raw, by scenario.
var goals = map[string]string{
	"core-noop": "≥ 0.97", "core-1ms-64w": "≥ 0.98", "request-reply": "≥ 1.0",
	"js-consume-noop": "≥ 1.0", "js-consume-1ms": "≥ 1.0",
	"js-publish-buffered": "≥ 0.95", "js-publish-sync": "≥ 0.95", "kv-put-get": "≥ 1.0",
	"handlers-core-1": "≥ 0.5", "handlers-core-100": "≥ 0.5", "handlers-core-1000": "≥ 0.5", "handlers-js-100": "≥ 0.5",
	"long-tasks-keepalive": "≥ 1,000", "long-tasks-throughput": "≥ 0.5", "long-tasks-throughput-1ms": "≥ 0.5",
}

// pair is "corral / raw" of two medians, or "–" when not measured.
func pair(corral, raw []float64) string {
	if len(corral) == 0 || len(raw) == 0 || median(corral) == 0 {
		return "–"
	}
	return num(median(corral)) + " / " + num(median(raw))
}

func extra(r *result, impl, key string) string {
	if v := r.Impl[impl].Extra[key]; len(v) > 0 {
		return num(median(v))
	}
	return "–"
}

func growth(out io.Writer, byName map[string]*result) {
	fmt.Fprintln(out, "\n| handlers | ms to all subscribed, raw / Corral | Corral/raw | goroutines per handler, raw / Corral | heap KiB per handler, raw / Corral |")
	fmt.Fprintln(out, "|---|---|---|---|---|")
	for _, name := range []string{"handlers-core-1", "handlers-core-100", "handlers-core-1000", "handlers-js-100"} {
		r, ok := byName[name]
		if !ok {
			continue
		}
		label := strings.TrimPrefix(name, "handlers-")
		label = strings.Replace(label, "-", " × ", 1)
		fmt.Fprintf(out, "| %s | %s / %s | %s | %s / %s | %s / %s |\n", label,
			num(r.Impl[implRaw].Median), num(r.Impl[implCorral].Median), num(r.Ratio),
			extra(r, implRaw, "goroutines_per_handler"), extra(r, implCorral, "goroutines_per_handler"),
			extra(r, implRaw, "heap_kib_per_handler"), extra(r, implCorral, "heap_kib_per_handler"))
	}
}

func sizes(out io.Writer, byName map[string]*result) {
	fmt.Fprintln(out, "\n| payload | core msgs/s, raw / Corral | core Corral/raw | core MiB/s Corral | JetStream msgs/s, raw / Corral | JetStream Corral/raw | JetStream MiB/s Corral |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|")
	for _, sz := range []struct{ label, core, js string }{
		{"128 B", "core-noop", "js-consume-noop"},
		{"4 KiB", "core-noop-4k", "js-consume-noop-4k"},
		{"64 KiB", "core-noop-64k", "js-consume-noop-64k"},
		{"1 MiB", "core-noop-1m", "js-consume-noop-1m"},
	} {
		c, okc := byName[sz.core]
		j, okj := byName[sz.js]
		if !okc || !okj {
			continue
		}
		fmt.Fprintf(out, "| %s | %s / %s | %s | %s | %s / %s | %s | %s |\n", sz.label,
			num(c.Impl[implRaw].Median), num(c.Impl[implCorral].Median), num(c.Ratio), extra(c, implCorral, "mib_per_s"),
			num(j.Impl[implRaw].Median), num(j.Impl[implCorral].Median), num(j.Ratio), extra(j, implCorral, "mib_per_s"))
	}
}
