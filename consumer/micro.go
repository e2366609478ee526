package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"

	"github.com/corral-go/corral/supervisor"
)

// Service is the NATS micro service a request handler is an endpoint of.
// Request handlers whose Service.Name is the same are the endpoints of one
// service; an empty Name is the handler's own name, so by default each
// request handler is a service of its own. The group answers the micro
// protocol for each service ($SRV.PING, $SRV.INFO and $SRV.STATS, alone
// or followed by the service's name, or its name and id), so `nats micro
// ls` and nats.go's micro clients find it; its stats are the handlers'
// counters.
type Service struct {
	// Name is the service's name: letters, digits, '-' and '_'. Default
	// the handler's name.
	Name string `yaml:"name"`
	// Version is the service's semantic version; the endpoints of one
	// service must not give different ones. Default 0.0.0, or the
	// version another endpoint of the service gives.
	Version string `yaml:"version"`
	// Description is the service's description, as INFO answers it; the
	// first endpoint to give one sets it. Default none.
	Description string `yaml:"description"`
}

// The service name and version micro accepts (nats.go/micro/service.go).
var (
	serviceName    = regexp.MustCompile(`^[A-Za-z0-9\-_]+$`)
	serviceVersion = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)
)

const defaultServiceVersion = "0.0.0"

// services are a group's micro services, by name; guarded by Group.mu
// but for what the responder alone touches.
type services struct {
	byName map[string]*microService
	// changed wakes the responder when a service comes or goes.
	changed chan struct{}
}

// microService is one service instance: its endpoints are request
// handlers. Its ID is made when its first endpoint is declared.
type microService struct {
	name, id, version, description string
	versionSet                     bool // an endpoint gave the version
	started                        time.Time
	endpoints                      []*handlerBase // in the order declared
	// subscribed is true while the responder answers for it on the live
	// connection.
	subscribed atomic.Bool
}

// attachLocked makes b an endpoint of its service, adding the service if
// it is new.
func (s *services) attachLocked(b *handlerBase) error {
	sc := b.cfg.Service
	name := sc.Name
	if name == "" {
		name = b.name
	}
	if !serviceName.MatchString(name) {
		return fmt.Errorf("%w: service.name %q: letters, digits, '-' and '_' only", supervisor.ErrInvalidConfig, name)
	}
	if sc.Version != "" && !serviceVersion.MatchString(sc.Version) {
		return fmt.Errorf("%w: service.version %q: not a semantic version (1.2.3)", supervisor.ErrInvalidConfig, sc.Version)
	}
	ms := s.byName[name]
	if ms == nil {
		ms = &microService{name: name, id: nuid.Next(), version: defaultServiceVersion, started: time.Now().UTC()}
	}
	if sc.Version != "" {
		if ms.versionSet && ms.version != sc.Version {
			return fmt.Errorf("%w: service.version %q: service %q is version %s", supervisor.ErrInvalidConfig, sc.Version, name, ms.version)
		}
		ms.version, ms.versionSet = sc.Version, true
	}
	if ms.description == "" {
		ms.description = sc.Description
	}
	ms.endpoints = append(ms.endpoints, b)
	if s.byName[name] == nil {
		s.byName[name] = ms
		s.wake()
	}
	return nil
}

// detachLocked removes b from its service, and the service when b was its
// last endpoint.
func (s *services) detachLocked(b *handlerBase) {
	for name, ms := range s.byName {
		for i, e := range ms.endpoints {
			if e != b {
				continue
			}
			ms.endpoints = append(ms.endpoints[:i:i], ms.endpoints[i+1:]...)
			if len(ms.endpoints) == 0 {
				delete(s.byName, name)
				s.wake()
			}
			return
		}
	}
}

func (s *services) wake() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// answers reports whether b's micro service answers on the live
// connection; true for a handler that is no endpoint.
func (g *Group) answers(b *handlerBase) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.answersLocked(b)
}

// answersLocked is answers with g.mu held.
func (g *Group) answersLocked(b *handlerBase) bool {
	for _, ms := range g.services.byName {
		for _, e := range ms.endpoints {
			if e == b {
				return ms.subscribed.Load()
			}
		}
	}
	return true
}

// responder answers the micro protocol for every service of its group on
// the live connection, subscribing again when the connection is replaced
// and as services come and go. It is a suture.Service.
type responder struct {
	g *Group
	// subs are the subscriptions of each service on the current
	// connection; only Serve touches them.
	subs map[*microService][]*nats.Subscription
}

// String names the responder in the tree.
func (r *responder) String() string { return "micro" }

// Serve answers until ctx ends.
func (r *responder) Serve(ctx context.Context) error {
	r.subs = map[*microService][]*nats.Subscription{}
	defer r.unsubscribe(nil)
	for {
		// Without a service, nothing needs the connection.
		for !r.any() {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-r.g.services.changed:
			}
		}
		nc, gone, err := r.g.src.Conn(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
	live:
		for {
			if err := r.sync(nc); err != nil {
				return fmt.Errorf("micro: %w", err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-gone:
				r.unsubscribe(nil) // died with the connection
				break live
			case <-r.g.services.changed:
			}
		}
	}
}

// any reports whether the group has a service.
func (r *responder) any() bool {
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	return len(r.g.services.byName) > 0
}

// sync subscribes for each service not answered yet and unsubscribes
// those gone; a round trip then makes sure the server has them.
func (r *responder) sync(nc *nats.Conn) error {
	r.g.mu.Lock()
	want := make(map[*microService]bool, len(r.g.services.byName))
	for _, ms := range r.g.services.byName {
		want[ms] = true
	}
	r.g.mu.Unlock()
	r.unsubscribe(func(ms *microService) bool { return !want[ms] })
	var added []*microService
	for ms := range want {
		if r.subs[ms] != nil {
			continue
		}
		for _, verb := range []micro.Verb{micro.PingVerb, micro.InfoVerb, micro.StatsVerb} {
			for _, subject := range controlSubjects(verb, ms) {
				sub, err := nc.Subscribe(subject, func(m *nats.Msg) { r.answer(verb, ms, m) })
				if err != nil {
					return fmt.Errorf("service %s: subscribe %s: %w", ms.name, subject, err)
				}
				r.subs[ms] = append(r.subs[ms], sub)
			}
		}
		added = append(added, ms)
	}
	if len(added) == 0 {
		return nil
	}
	if err := nc.FlushTimeout(subscribeTimeout); err != nil {
		return err
	}
	for _, ms := range added {
		ms.subscribed.Store(true)
		r.g.mu.Lock()
		version := ms.version
		r.g.mu.Unlock()
		r.g.events.Emit(ServiceAnswering{EventTime: r.g.events.Stamp(), Service: ms.name, ID: ms.id, Version: version})
	}
	return nil
}

// unsubscribe drops the subscriptions of the services drop selects, or of
// all with a nil drop.
func (r *responder) unsubscribe(drop func(*microService) bool) {
	for ms, subs := range r.subs {
		if drop != nil && !drop(ms) {
			continue
		}
		ms.subscribed.Store(false)
		for _, sub := range subs {
			_ = sub.Unsubscribe()
		}
		delete(r.subs, ms)
	}
}

// controlSubjects are the three subjects of verb that ms answers: all
// services, those of its name, and its instance.
func controlSubjects(verb micro.Verb, ms *microService) []string {
	all, _ := micro.ControlSubject(verb, "", "")
	kind, _ := micro.ControlSubject(verb, ms.name, "")
	one, _ := micro.ControlSubject(verb, ms.name, ms.id)
	return []string{all, kind, one}
}

// answer replies to a PING, INFO or STATS request for ms.
func (r *responder) answer(verb micro.Verb, ms *microService, m *nats.Msg) {
	// version, endpoints and description change as endpoints come and go,
	// under the group's lock.
	r.g.mu.Lock()
	id := micro.ServiceIdentity{Name: ms.name, ID: ms.id, Version: ms.version, Metadata: map[string]string{}}
	endpoints := append([]*handlerBase(nil), ms.endpoints...)
	description := ms.description
	r.g.mu.Unlock()
	var v any
	switch verb {
	case micro.PingVerb:
		v = micro.Ping{ServiceIdentity: id, Type: micro.PingResponseType}
	case micro.InfoVerb:
		info := micro.Info{ServiceIdentity: id, Type: micro.InfoResponseType, Description: description,
			Endpoints: make([]micro.EndpointInfo, 0, len(endpoints))}
		for _, b := range endpoints {
			info.Endpoints = append(info.Endpoints, micro.EndpointInfo{Name: b.name, Subject: b.cfg.Subject,
				QueueGroup: b.cfg.QueueGroup, Metadata: map[string]string{}})
		}
		v = info
	default:
		st := micro.Stats{ServiceIdentity: id, Type: micro.StatsResponseType, Started: ms.started,
			Endpoints: make([]*micro.EndpointStats, 0, len(endpoints))}
		for _, b := range endpoints {
			st.Endpoints = append(st.Endpoints, b.stats.endpointStats(b))
		}
		v = st
	}
	data, err := json.Marshal(v)
	if err != nil {
		respondError(m, &ServiceError{Code: 500, Description: err.Error()})
		return
	}
	_ = m.Respond(data)
}

// ServiceAnswering is emitted when a micro service answers discovery on
// the live connection: once its first endpoint is declared, and again
// after the connection was replaced.
type ServiceAnswering struct {
	supervisor.EventTime
	Service string
	ID      string
	Version string
}

// Kind returns "consumer.service_answering".
func (ServiceAnswering) Kind() string { return "consumer.service_answering" }

// Level returns [supervisor.DebugLevel].
func (ServiceAnswering) Level() supervisor.Level { return supervisor.DebugLevel }
