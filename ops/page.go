package ops

import (
	_ "embed"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/supervisor"
)

//go:embed page.html
var pageHTML string

// page renders the status page: the Status snapshot, with each handler's
// and task queue's rate since the page was last rendered a second or more
// before.
type page struct {
	c     *corral.Client
	tmpl  *template.Template
	fleet fleetView

	mu    sync.Mutex
	at    time.Time
	seen  map[string]uint64  // handlers' received, task queues' completed
	rates map[string]float64 // per second
}

func newPage(c *corral.Client) (*page, error) {
	funcs := template.FuncMap{
		"ago": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return time.Since(t).Truncate(time.Second).String()
		},
		"rate": func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
		"add":  func(a, b int) int { return a + b },
		"short": func(d time.Duration) string {
			switch {
			case d >= time.Millisecond:
				return d.Round(10 * time.Microsecond).String()
			case d >= time.Microsecond:
				return d.Round(10 * time.Nanosecond).String()
			}
			return d.String()
		},
	}
	tmpl, err := template.New("page").Funcs(funcs).Parse(pageHTML)
	if err != nil {
		return nil, err
	}
	return &page{c: c, tmpl: tmpl, fleet: fleetView{c: c}, seen: map[string]uint64{}, rates: map[string]float64{}}, nil
}

// pageData is what the template shows.
type pageData struct {
	corral.Status
	Ready   bool
	Pending string // what is not ready, joined
	Refresh int
	Rates   map[string]float64
	Now     time.Time
	Fleet   fleetData
}

// Up and Connected let the template colour states.
func (pageData) Up(s supervisor.State) bool          { return s == supervisor.Running }
func (pageData) Connected(s connection.State) bool   { return s == connection.StateConnected }
func (d pageData) HandlerRate(name string) float64   { return d.Rates["handler/"+name] }
func (d pageData) TaskRate(queue string) float64     { return d.Rates["tasks/"+queue] }
func (pageData) Percent(n, of int) int               { return 100 * n / max(of, 1) }
func (pageData) Held(inFlight int64, queued int) int { return int(inFlight) + queued }

func (p *page) serve(w http.ResponseWriter, r *http.Request) {
	refresh := 2
	if v, err := strconv.Atoi(r.URL.Query().Get("refresh")); err == nil && v >= 0 && v <= 3600 {
		refresh = v
	}
	st := p.c.Status()
	d := pageData{Status: st, Ready: len(st.NotReady) == 0, Pending: strings.Join(st.NotReady, ", "),
		Refresh: refresh, Rates: p.sample(st), Now: time.Now(), Fleet: p.fleet.gather(r.Context(), st)}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// An error here is the client's connection going away mid-page.
	_ = p.tmpl.Execute(w, d)
}

// sample returns the rates, computed anew when a second or more passed
// since the last computation, so that viewers refreshing at once do not
// make them jump.
func (p *page) sample(st corral.Status) map[string]float64 {
	now := time.Now()
	cur := make(map[string]uint64, len(st.Handlers)+len(st.Tasks))
	for _, h := range st.Handlers {
		cur["handler/"+h.Name] = h.Counters.Received
	}
	for _, t := range st.Tasks {
		cur["tasks/"+t.Queue] = t.Counters.Completed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if dt := now.Sub(p.at); dt >= time.Second {
		rates := make(map[string]float64, len(cur))
		for k, v := range cur {
			if old, ok := p.seen[k]; ok && v >= old && !p.at.IsZero() {
				rates[k] = float64(v-old) / dt.Seconds()
			}
		}
		p.at, p.seen, p.rates = now, cur, rates
	}
	return p.rates
}
