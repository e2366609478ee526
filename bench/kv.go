package main

import (
	"context"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/kv"
)

// kvKeys is how many distinct keys the KV scenario cycles through.
const kvKeys = 1000

var keys = func() []string {
	k := make([]string, kvKeys)
	for i := range k {
		k[i] = "key." + strconv.Itoa(i)
	}
	return k
}()

// kvLoop does n rounds of a put then a get of the same key, one caller;
// the rate counts both operations, and each one's latency is recorded.
func kvLoop(ctx context.Context, e *env, n int, put func(string) error, get func(string) error) (sample, error) {
	lat := make([]time.Duration, 0, 2*n)
	e.startClock()
	start := time.Now()
	for i := range n {
		if ctx.Err() != nil {
			return sample{}, ctx.Err()
		}
		k := keys[i%kvKeys]
		t := time.Now()
		if err := put(k); err != nil {
			return sample{}, err
		}
		t2 := time.Now()
		if err := get(k); err != nil {
			return sample{}, err
		}
		lat = append(lat, t2.Sub(t), time.Since(t2))
	}
	e.stopClock()
	return sample{value: float64(2*n) / time.Since(start).Seconds(), msgs: 2 * n, lat: lat}, nil
}

func rawKV(ctx context.Context, e *env, n int) (sample, error) {
	nc, err := connect(e)
	if err != nil {
		return sample{}, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return sample{}, err
	}
	_ = js.DeleteKeyValue(ctx, "BENCHRAW")
	b, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "BENCHRAW", Storage: jetstream.FileStorage})
	if err != nil {
		return sample{}, err
	}
	return kvLoop(ctx, e, n,
		func(k string) error { _, err := b.Put(ctx, k, payload); return err },
		func(k string) error { _, err := b.Get(ctx, k); return err })
}

// corralKV uses the Client's bucket (raw bytes), declared in its Config,
// as an application does.
func corralKV(ctx context.Context, e *env, n int) (sample, error) {
	c, err := startCorral(ctx, e, corral.Config{KV: map[string]kv.Config{"BENCHCORRAL": {}}}, nil)
	if err != nil {
		return sample{}, err
	}
	defer c.stop()
	nc, err := c.Conn(ctx)
	if err != nil {
		return sample{}, err
	}
	if js, err := jetstream.New(nc); err == nil {
		_ = js.DeleteKeyValue(ctx, "BENCHCORRAL")
	}
	b, err := c.KV("BENCHCORRAL")
	if err != nil {
		return sample{}, err
	}
	if _, err := b.Raw(ctx); err != nil { // declared before the clock starts, as raw's is
		return sample{}, err
	}
	return kvLoop(ctx, e, n,
		func(k string) error { _, err := b.Put(ctx, k, payload); return err },
		func(k string) error { _, err := b.Get(ctx, k); return err })
}
