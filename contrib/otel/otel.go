// Package wardotel reports what ward does as OpenTelemetry metrics and
// traces: it implements ward's observer (package observe), which the
// library calls on every seal and open, key-service call, job batch,
// rotation step and password hash, and turns the fleet's key-usage totals
// into a gauge. Names are under "ward." and follow the OpenTelemetry
// semantic conventions (durations in seconds, "error.type" for failures).
// No attribute carries a value, a key's material, a password, a subject
// or a row: key IDs (public), table and column names, schemes and kinds.
//
// A service calls [Setup] once, which reads the standard OTEL_*
// environment variables, and sets the observer it returns with
// observe.Set:
//
//	obs, shutdown, err := wardotel.Setup(ctx, os.Stdout)
//	if obs != nil { observe.Set(obs); defer shutdown(context.Background()) }
package wardotel

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/observe"
)

// Scope is the instrumentation scope of ward's metrics and spans.
const Scope = "github.com/wardlab/ward"

// Observer is an observe.Observer over an OpenTelemetry meter and tracer.
type Observer struct {
	values                     metric.Int64Counter
	kmsDuration                metric.Float64Histogram
	kmsCacheHits               metric.Int64Counter
	jobRows                    metric.Int64Counter
	jobRate, jobETA            metric.Float64Gauge
	stepDuration, hashDuration metric.Float64Histogram
	limiterRejections          metric.Int64Counter
	keySeals                   metric.Int64Gauge
	tracer                     trace.Tracer
}

var _ observe.Observer = (*Observer)(nil)

// New makes the instruments on mp's meter and the spans on tp's tracer.
func New(mp metric.MeterProvider, tp trace.TracerProvider) (*Observer, error) {
	m := mp.Meter(Scope)
	o := &Observer{tracer: tp.Tracer(Scope)}
	var errs [10]error
	o.values, errs[0] = m.Int64Counter("ward.value.operations", metric.WithUnit("{value}"), metric.WithDescription("Values sealed or opened by ward's field layer"))
	o.kmsDuration, errs[1] = m.Float64Histogram("ward.kms.call.duration", metric.WithUnit("s"), metric.WithDescription("Calls to a key service"))
	o.kmsCacheHits, errs[2] = m.Int64Counter("ward.kms.cache.hits", metric.WithUnit("{hit}"), metric.WithDescription("Envelope data keys served from the cache, with no call"))
	o.jobRows, errs[3] = m.Int64Counter("ward.job.rows", metric.WithUnit("{row}"), metric.WithDescription("Rows written by re-encryption jobs"))
	o.jobRate, errs[4] = m.Float64Gauge("ward.job.rate", metric.WithUnit("{row}/s"), metric.WithDescription("A job's rows per second since it began"))
	o.jobETA, errs[5] = m.Float64Gauge("ward.job.remaining", metric.WithUnit("s"), metric.WithDescription("A job's time left at its rate so far"))
	o.stepDuration, errs[6] = m.Float64Histogram("ward.rotation.step.duration", metric.WithUnit("s"), metric.WithDescription("Steps of a fleet rotation, waits for the fleet included"))
	o.hashDuration, errs[7] = m.Float64Histogram("ward.password.duration", metric.WithUnit("s"), metric.WithDescription("Password hashes and verifications"))
	o.limiterRejections, errs[8] = m.Int64Counter("ward.password.limiter.rejections", metric.WithUnit("{request}"), metric.WithDescription("Hashes the limiter refused"))
	o.keySeals, errs[9] = m.Int64Gauge("ward.key.seals", metric.WithUnit("{value}"), metric.WithDescription("Values each keyring key has sealed, summed over the fleet (advisory; fleet.Usage)"))
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("wardotel: %w", err)
		}
	}
	return o, nil
}

// errorType is the error.type attribute of a failure's kind ("" none).
func errorType(kind string) []attribute.KeyValue {
	if kind == "" {
		return nil
	}
	return []attribute.KeyValue{attribute.String("error.type", kind)}
}

// Value counts a seal or open.
func (o *Observer) Value(v observe.Value) {
	attrs := append([]attribute.KeyValue{attribute.String("ward.operation", v.Op.String()),
		attribute.String("ward.key.id", fmt.Sprintf("%08x", v.Key)), attribute.String("ward.key.class", v.Class)}, errorType(v.ErrKind)...)
	o.values.Add(context.Background(), 1, metric.WithAttributes(attrs...))
}

// KMS records a key-service call (a span and its duration) or a cache hit.
func (o *Observer) KMS(c observe.KMSCall) {
	ctx := context.Background()
	provider := attribute.String("ward.kms.provider", c.Provider)
	if c.Op == "cache-hit" {
		o.kmsCacheHits.Add(ctx, 1, metric.WithAttributes(provider))
		return
	}
	attrs := append([]attribute.KeyValue{provider, attribute.String("ward.kms.operation", c.Op)}, errorType(c.ErrKind)...)
	o.kmsDuration.Record(ctx, c.Duration.Seconds(), metric.WithAttributes(attrs...))
	o.span("ward.kms "+c.Op, c.Duration, attrs)
}

// span records a finished span of d that ends now.
func (o *Observer) span(name string, d time.Duration, attrs []attribute.KeyValue) {
	end := time.Now()
	_, s := o.tracer.Start(context.Background(), name, trace.WithTimestamp(end.Add(-d)), trace.WithAttributes(attrs...))
	s.End(trace.WithTimestamp(end))
}

// Job records a batch: its rows, and the job's rate and time left.
func (o *Observer) Job(b observe.JobBatch) {
	ctx := context.Background()
	attrs := metric.WithAttributes(attribute.String("ward.table", b.Table), attribute.String("ward.column", b.Column))
	o.jobRows.Add(ctx, int64(b.Rows), attrs)
	if s := b.Elapsed.Seconds(); s > 0 && b.Done > 0 {
		rate := float64(b.Done) / s
		o.jobRate.Record(ctx, rate, attrs)
		o.jobETA.Record(ctx, float64(max(b.Total-b.Done, 0))/rate, attrs)
	}
}

// Rotation records a step of a rotation (a span and its duration).
func (o *Observer) Rotation(s observe.RotationStep) {
	attrs := []attribute.KeyValue{attribute.String("ward.rotation.step", s.Step)}
	o.stepDuration.Record(context.Background(), s.Waited.Seconds(), metric.WithAttributes(attrs...))
	o.span("ward.rotation "+s.Step, s.Waited, attrs)
}

// Hash records a password operation, or the limiter's refusal.
func (o *Observer) Hash(h observe.Hash) {
	ctx := context.Background()
	attrs := metric.WithAttributes(attribute.String("ward.password.operation", h.Op), attribute.String("ward.password.scheme", h.Scheme))
	if h.Rejected {
		o.limiterRejections.Add(ctx, 1, attrs)
		return
	}
	o.hashDuration.Record(ctx, h.Duration.Seconds(), attrs)
}

// KeyUsage records the fleet's seals per key: give it to
// fleet.Registry.OnUsage.
func (o *Observer) KeyUsage(us []fleet.KeyUsage) {
	for _, u := range us {
		o.keySeals.Record(context.Background(), int64(min(u.Seals, 1<<62)), metric.WithAttributes(
			attribute.String("ward.key.id", u.Key.String()), attribute.String("ward.key.algorithm", u.Algorithm.String())))
	}
}
