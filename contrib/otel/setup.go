package wardotel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Setup builds the providers the OTEL_* environment asks for and an
// Observer over them. OTEL_METRICS_EXPORTER and OTEL_TRACES_EXPORTER name
// the exporter: "console" (JSON lines on console), "otlp" (OTLP over
// HTTP, configured by OTEL_EXPORTER_OTLP_* as the exporters read them) or
// "none", the default; OTEL_METRIC_EXPORT_INTERVAL is the metrics'
// period in milliseconds (default 60000). With both "none" it returns a
// nil Observer: the process observes nothing and pays nothing. shutdown
// flushes and stops the providers.
func Setup(ctx context.Context, console io.Writer) (obs *Observer, shutdown func(context.Context) error, err error) {
	getenv := os.Getenv
	mp, err := meterProvider(ctx, getenv, console)
	if err != nil {
		return nil, nil, err
	}
	tp, err := tracerProvider(ctx, getenv, console)
	if err != nil {
		return nil, nil, err
	}
	if mp == nil && tp == nil {
		return nil, func(context.Context) error { return nil }, nil
	}
	shutdown = func(ctx context.Context) error {
		var errs []error
		if mp != nil {
			errs = append(errs, mp.Shutdown(ctx))
		}
		if tp != nil {
			errs = append(errs, tp.Shutdown(ctx))
		}
		return errors.Join(errs...)
	}
	switch {
	case tp == nil:
		obs, err = New(mp, noop.NewTracerProvider())
	case mp == nil:
		obs, err = New(sdkmetric.NewMeterProvider(), tp) // metrics go nowhere
	default:
		obs, err = New(mp, tp)
	}
	return obs, shutdown, err
}

// meterProvider is OTEL_METRICS_EXPORTER's provider, nil for none.
func meterProvider(ctx context.Context, getenv func(string) string, console io.Writer) (*sdkmetric.MeterProvider, error) {
	every := 60 * time.Second
	if v := getenv("OTEL_METRIC_EXPORT_INTERVAL"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("wardotel: OTEL_METRIC_EXPORT_INTERVAL=%q: milliseconds, above 0", v)
		}
		every = time.Duration(ms) * time.Millisecond
	}
	var exp sdkmetric.Exporter
	var err error
	switch v := getenv("OTEL_METRICS_EXPORTER"); v {
	case "", "none":
		return nil, nil
	case "console":
		exp, err = stdoutmetric.New(stdoutmetric.WithWriter(console))
	case "otlp":
		exp, err = otlpmetrichttp.New(ctx)
	default:
		return nil, fmt.Errorf("wardotel: OTEL_METRICS_EXPORTER=%q: console, otlp or none", v)
	}
	if err != nil {
		return nil, fmt.Errorf("wardotel: the metrics exporter: %w", err)
	}
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(every)))), nil
}

// tracerProvider is OTEL_TRACES_EXPORTER's provider, nil for none.
func tracerProvider(ctx context.Context, getenv func(string) string, console io.Writer) (*sdktrace.TracerProvider, error) {
	var exp sdktrace.SpanExporter
	var err error
	switch v := getenv("OTEL_TRACES_EXPORTER"); v {
	case "", "none":
		return nil, nil
	case "console":
		exp, err = stdouttrace.New(stdouttrace.WithWriter(console))
	case "otlp":
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("wardotel: OTEL_TRACES_EXPORTER=%q: console, otlp or none", v)
	}
	if err != nil {
		return nil, fmt.Errorf("wardotel: the traces exporter: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp)), nil
}
