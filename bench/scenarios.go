package main

import (
	"fmt"
	"time"
)

// scenarios lists every comparison, in the order; 128-byte
// payloads throughout. It is one table, longer than a function should be,
// so that every scenario's settings are read side by side.
func scenarios() []scenario {
	noop1 := coreWork{workers: 1, do: noop}
	pool64 := coreWork{workers: 64, do: sleep1ms}
	// Every JetStream consumer runs the same number of handler calls at
	// once: Corral's workers, raw Consume calls, Watermill subscriptions.
	// Four for the no-op handler (the per-package benchmark's setting;
	// four Consume calls outrun one on this machine), 16 for 1ms.
	// Corral runs with its defaults (queue_size included); the
	// diagnostic beside them gives it a queue of 512, nats.go Consume's
	// own buffer, and so does the task queue's baseline (its best).
	jsNoop := jsWork{workers: 4, do: noop}
	js1ms := jsWork{workers: 16, do: sleep1ms}
	jsNoop512 := jsWork{workers: 4, do: noop, queue: 512}
	return append([]scenario{
		{
			name: "core-noop", about: "core pub -> no-op handler [nc.Subscribe callback]",
			unit: "msgs/s", quickN: 500_000, fullN: 1_000_000, warmup: true,
			raw: rawCallback(noop1), corral: corralCore(noop1),
		},
		{
			name: "core-1ms-64w", about: "core pub -> 1ms handler, 64 workers [hand-written pool on ChanSubscribe]",
			unit: "msgs/s", quickN: 20_000, fullN: 100_000, warmup: true,
			raw: rawPool(pool64), corral: corralCore(pool64),
		},
		{
			name: "request-reply", about: "request/reply, one caller [micro service endpoint]",
			unit: "req/s", latency: true, quickN: 5_000, fullN: 30_000, warmup: true,
			raw: rawMicro, corral: corralRequest,
		},
		{
			name: "js-consume-noop", about: "JetStream consume + ack, no-op, 4 at once [4 Consume calls + m.Ack(); Watermill, 4 subscriptions]",
			unit: "msgs/s", quickN: 30_000, fullN: 200_000, warmup: true,
			raw: rawConsume(jsNoop), corral: corralConsume(jsNoop), watermill: watermillConsume(jsNoop),
		},
		{
			name: "js-consume-1ms", about: "JetStream consume + ack, 1ms handler, 16 at once [16 Consume calls; Watermill, 16 subscriptions]",
			unit: "msgs/s", quickN: 5_000, fullN: 30_000, warmup: true,
			raw: rawConsume(js1ms), corral: corralConsume(js1ms), watermill: watermillConsume(js1ms),
		},
		{
			name: "diag-watermill-defaults", about: "diagnostic, not run by default: consume + ack, no-op, Watermill as it comes (DoubleAck, one subscription; logging off)",
			unit: "msgs/s", quickN: 10_000, fullN: 30_000, warmup: true, diagnostic: true,
			raw: rawConsume(jsNoop), corral: corralConsume(jsNoop), watermill: watermillSubscriber(jsWork{workers: 1, do: noop}, false),
		},
		{
			name: "diag-consume-queue-512", about: "diagnostic, not run by default: consume + ack, no-op, 4 at once, Corral with queue_size 512",
			unit: "msgs/s", quickN: 30_000, fullN: 200_000, warmup: true, diagnostic: true,
			raw: rawConsume(jsNoop), corral: corralConsume(jsNoop512),
		},
		{
			name: "js-publish-buffered", about: "buffered publish, all acked [PublishAsync + Msg-Id, 4000 window; Watermill, 64 publishers]",
			unit: "msgs/s", quickN: 50_000, fullN: 300_000, warmup: true,
			raw: rawPublishAsync(true), corral: corralPublish(false), watermill: watermillPublish,
		},
		{
			name: "js-publish-buffered-no-id", about: "buffered publish without Msg-Id, all acked [PublishAsync, 4000 window; Corral no_msg_id]",
			unit: "msgs/s", quickN: 50_000, fullN: 300_000, warmup: true,
			raw: rawPublishAsync(false), corral: corralPublish(true),
		},
		{
			name: "js-publish-sync", about: "sync publish, one caller [js.Publish + Msg-Id; Watermill publisher]",
			unit: "msgs/s", latency: true, quickN: 3_000, fullN: 20_000, warmup: true,
			raw: rawPublishSync(true), corral: corralPublishSync(false), watermill: watermillPublishSync,
		},
		{
			name: "js-publish-sync-no-id", about: "sync publish without Msg-Id, one caller [js.Publish; Corral no_msg_id]",
			unit: "msgs/s", latency: true, quickN: 3_000, fullN: 20_000, warmup: true,
			raw: rawPublishSync(false), corral: corralPublishSync(true),
		},
		{
			name: "kv-put-get", about: "KV put then get, one caller [jetstream KeyValue]",
			unit: "ops/s", latency: true, quickN: 2_000, fullN: 15_000, warmup: true,
			raw: rawKV, corral: corralKV,
		},
		{
			name: "publish-outage", about: "publish through a 1s server restart [async publish loop + retry + Msg-Id]",
			unit: "ms_to_all_acked", lower: true, quickN: 60_000, fullN: 150_000, quickRounds: 3, fullRounds: 7,
			roundTimeout: 90 * time.Second,
			raw:          rawOutage, corral: corralOutage,
		},
		{
			name: "idle", about: "idle footprint over the process without the client [bare nats.Connect]",
			unit: "goroutines", lower: true, quickRounds: 1, fullRounds: 3, noSample: true, countGoal: 12,
			raw: rawIdle, corral: corralIdle,
		},
	}, append(append(append(taskScenarios(jsNoop512), sizeScenarios()...), growthScenarios()...), clusterScenarios(jsNoop)...)...)
}

// clusterScenarios are consume and buffered publish on an R3 stream of a
// three-node cluster, raw and Corral on the same cluster.
func clusterScenarios(jsNoop jsWork) []scenario {
	return []scenario{
		{
			name: "r3-js-consume-noop", about: "R3 stream, three-node cluster: JetStream consume + ack, no-op, 4 at once [4 Consume calls]",
			unit: "msgs/s", quickN: 20_000, fullN: 100_000, quickRounds: 3, warmup: true,
			raw: onCluster(rawConsume(jsNoop)), corral: onCluster(corralConsume(jsNoop)),
		},
		{
			name: "r3-js-publish-buffered", about: "R3 stream, three-node cluster: buffered publish, all acked [PublishAsync + Msg-Id, 4000 window]",
			unit: "msgs/s", quickN: 30_000, fullN: 150_000, quickRounds: 3, warmup: true,
			raw: onCluster(rawPublishAsync(true)), corral: onCluster(corralPublish(false)),
		},
	}
}

// sizeScenarios repeat core and JetStream consume at larger payloads, so
// that the cost of copying shows; each reports MiB/s beside msgs/s.
func sizeScenarios() []scenario {
	var out []scenario
	for _, sz := range []struct {
		name          string
		bytes, n, jsN int
		// jsQuickN keeps raw's -quick rounds below the server's 64MiB
		// max_pending, past which its Consume calls stall for the ack
		// wait (the full run shows that).
		jsQuickN int
	}{{"4k", 4 << 10, 200_000, 40_000, 10_000}, {"64k", 64 << 10, 20_000, 5_000, 500}, {"1m", 1 << 20, 1_000, 100, 25}} {
		core := coreWork{workers: 1, do: noop, size: sz.bytes}
		js := jsWork{workers: 4, do: noop, size: sz.bytes}
		out = append(out, scenario{
			name: "core-noop-" + sz.name, about: fmt.Sprintf("core pub -> no-op handler, %s payloads [nc.Subscribe callback]", sz.name),
			unit: "msgs/s", quickN: sz.n / 4, fullN: sz.n, quickRounds: 3, warmup: true,
			raw: rawCallback(core), corral: corralCore(core),
		}, scenario{
			name: "js-consume-noop-" + sz.name, about: fmt.Sprintf("JetStream consume + ack, no-op, 4 at once, %s payloads, Corral's defaults [4 Consume calls]", sz.name),
			unit: "msgs/s", quickN: sz.jsQuickN, fullN: sz.jsN, quickRounds: 3, warmup: true,
			raw: rawConsume(js), corral: corralConsume(js),
		})
	}
	return out
}
