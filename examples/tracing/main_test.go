package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/corral-go/corral/corraltest"
)

func TestMain(m *testing.M) { corraltest.VerifyTestMain(m) }

// span is what the test reads of a span the stdout exporter printed.
type span struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
}

// The program prints the five spans of the order, from the application's
// own to the request handler's, each the child of the one before, all in
// the trace its last line names.
func TestTracingPrintsOneTrace(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	byName := map[string]span{}
	var last string
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "{") {
			last = line
			continue
		}
		var s span
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("a line that is not a span: %v\n%s", err, line)
		}
		byName[s.Name] = s
	}
	names := []string{"checkout", "send orders.new", "process fulfil", "request svc.price", "process price"}
	root, ok := byName[names[0]]
	if !ok {
		t.Fatalf("no span %q among %v", names[0], byName)
	}
	if want := "order priced $42; every span above is in trace " + root.SpanContext.TraceID; last != want {
		t.Errorf("last line %q, want %q", last, want)
	}
	for i, name := range names[1:] {
		s, ok := byName[name]
		if !ok {
			t.Errorf("no span %q", name)
			continue
		}
		parent := byName[names[i]]
		if s.SpanContext.TraceID != root.SpanContext.TraceID || s.Parent.SpanID != parent.SpanContext.SpanID {
			t.Errorf("span %q: trace %s, parent %s; want trace %s, parent %q's %s", name,
				s.SpanContext.TraceID, s.Parent.SpanID, root.SpanContext.TraceID, names[i], parent.SpanContext.SpanID)
		}
	}
}
